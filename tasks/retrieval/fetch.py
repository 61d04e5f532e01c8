"""Fetch one result page and keep its main text.

URLs come from search results, i.e. from strangers, so the fetcher is a
server-side request forgery risk: a result (or a redirect) pointing at
http://169.254.169.254/ or http://localhost:8080/admin would make us read
our own network. Hence:
- only http and https;
- the host is resolved and every address must be public (not private,
  loopback, link-local, multicast, reserved, unspecified, CGNAT ...), unless
  `settings.allow_private_fetch` or the host is in `allow_hosts` (endpoints
  the user configured, see `configured_hosts`);
- redirects are followed by hand, at most 5, and every hop is checked again;
- plain-http requests go to the address that was checked (Host header kept),
  so a DNS answer that changes between check and connect cannot slip in a
  private address; https relies on certificate checking for the same
  guarantee (an internal server has no certificate for the attacker's name);
- the body is streamed and capped (5 MB, decoded), and the whole fetch
  (connect, headers, body, every redirect) has one deadline, so a server
  trickling headers or an endless body cannot hold a worker.

Failures raise RemoteError: blocked, timeout, network, http_<status>,
not_html, too_large, too_many_redirects.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from tasks.common.settings import Settings
from tasks.retrieval.providers.searxng import SearxngSettings
from tasks.common.http import CallPolicy, Outbound, call, deadline, redact, safe_url, scrub, status_error
from schemas.errors import RemoteError

log = logging.getLogger(__name__)

MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Elements whose text is never article text, for the fallback extractor.
BOILERPLATE_TAGS = (
    "script", "style", "noscript", "template", "svg", "iframe", "nav", "header", "footer", "aside", "form",
)

Resolver = Callable[[str, int], list[str]]


@dataclass(frozen=True)
class FetchedPage:
    text: str
    http_status: int
    final_url: str


def configured_hosts(settings: Settings) -> frozenset[str]:
    """Hosts the user pointed searchlake at (a SearXNG instance on the LAN),
    which may be fetched even when they are private."""
    hosts = set()
    searxng = settings.section(SearxngSettings).credential
    if searxng:
        host = httpx.URL(searxng).host
        if host:
            hosts.add(host.lower())
    return frozenset(hosts)


def fetch_content(
    url: str,
    settings: Settings,
    client: httpx.Client,
    *,
    allow_hosts: Iterable[str] = (),
    resolver: Resolver | None = None,
    max_bytes: int = MAX_BYTES,
) -> FetchedPage:
    """GET `url` (following up to 5 checked redirects) and extract its main text,
    truncated to settings.content_max_chars. The whole fetch — every hop's
    connect, headers and body, and a retry — ends within fetch_deadline(settings)."""
    allowed = frozenset(h.lower() for h in allow_hosts)
    resolve = resolver or resolve_host
    current = url
    try:
        with deadline(fetch_deadline(settings)):
            for _ in range(MAX_REDIRECTS + 1):
                target = _vet(current, settings, allowed, resolve)
                with closing(_get(client, target, current, settings)) as response:
                    if response.is_redirect:
                        current = _next_hop(current, response)
                        continue
                    body = _read_body(response, current, max_bytes)
                    status = response.status_code
                # Extract after the connection went back to the pool.
                text = scrub(extract_text(body, current))[: settings.content_max_chars]
                return FetchedPage(text=text, http_status=status, final_url=current)
    except httpx.InvalidURL:
        # httpx parses a redirect's Location itself, before we can vet it.
        raise RemoteError("blocked", f"fetch {safe_url(current)}: redirect to an unusable URL") from None
    except httpx.TimeoutException:  # the body, read after the shared path handed the response over
        raise RemoteError("timeout", f"fetch {safe_url(current)}: no complete page within "
                                     f"{fetch_deadline(settings):g} s (timeout)") from None
    except httpx.HTTPError as exc:
        raise RemoteError("network", f"fetch {safe_url(current)}: {type(exc).__name__}: {redact(str(exc))}") from None
    raise RemoteError("too_many_redirects", f"fetch {safe_url(url)}: more than {MAX_REDIRECTS} redirects")


def fetch_deadline(settings: Settings) -> float:
    """One deadline for a whole fetch, redirects and retry included."""
    return 2 * settings.http_timeout


def _get(client: httpx.Client, target: "_Target", url: str, settings: Settings) -> httpx.Response:
    """One hop through the shared HTTP path, body left unread; a redirect or
    a 4xx is the fetcher's to handle, 429/5xx and timeouts are retried."""
    def answer(response: httpx.Response) -> httpx.Response:
        if response.status_code == 429 or response.status_code >= 500:
            raise status_error(response)
        return response

    try:
        return call(client, Outbound("GET", target.url, headers=target.headers),
                    CallPolicy(retries=settings.http_retries, stream=True), read=answer)
    except RemoteError as exc:  # named by the page's URL, not the pinned address
        raise RemoteError(exc.code, f"fetch {safe_url(url)}: {exc.reason}", http_status=exc.http_status,
                          reason=exc.reason) from None


# -- address checks -----------------------------------------------------------
@dataclass(frozen=True)
class _Target:
    url: str
    headers: dict


def _vet(url: str, settings: Settings, allowed: frozenset[str], resolve: Resolver) -> _Target:
    """Refuse what must not be fetched; say where to connect for what may."""
    try:
        parsed = httpx.URL(url) if _is_http(url) else None
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or not parsed.host:
        raise RemoteError("blocked", f"fetch refused: only http(s) URLs with a host ({url[:60]!r})")
    host = parsed.host.lower()
    if settings.allow_private_fetch or host in allowed:
        return _Target(url, {})
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = [host] if _is_ip_literal(host) else resolve(host, port)
    for address in addresses:
        reason = refusal_reason(address)
        if reason:
            raise RemoteError("blocked", f"fetch refused: {host} resolves to {reason} address {address}")
    if parsed.scheme == "http":
        # Connect to the address just checked, not to a second DNS answer.
        pinned = str(parsed.copy_with(host=addresses[0]))
        return _Target(pinned, {"Host": parsed.netloc.decode("ascii")})
    return _Target(url, {})


def _is_http(url: str) -> bool:
    return url.split(":", 1)[0].strip().lower() in ("http", "https")


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def refusal_reason(address: str) -> str | None:
    """Why an address is off limits ("loopback", "private", ...), None if public."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is loopback too
    for kind in ("loopback", "link_local", "unspecified", "multicast", "reserved", "private"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    if not ip.is_global:  # e.g. 100.64.0.0/10 shared (CGNAT) space
        return "non-global"
    return None


def resolve_host(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for host (IP literals included)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise RemoteError("network", f"fetch: cannot resolve {host}: {exc}") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise RemoteError("network", f"fetch: {host} has no address")
    return addresses


# -- response handling --------------------------------------------------------
def _next_hop(current: str, response: httpx.Response) -> str:
    location = response.headers.get("Location")
    if not location:
        raise RemoteError(
            f"http_{response.status_code}", f"fetch {safe_url(current)}: redirect without Location",
            http_status=response.status_code,
        )
    return urljoin(current, location)


def _read_body(response: httpx.Response, url: str, max_bytes: int) -> str | bytes:
    """The body, as text when the charset is declared, else bytes for the
    extractor to sniff (pages often declare it only in a <meta> tag)."""
    status = response.status_code
    if not response.is_success:
        raise RemoteError(f"http_{status}", f"fetch {safe_url(url)}: HTTP {status}", http_status=status)
    media_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if media_type and media_type not in HTML_TYPES:
        raise RemoteError("not_html", f"fetch {safe_url(url)}: content type {media_type}", http_status=status)
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise RemoteError("too_large", f"fetch {safe_url(url)}: {declared} bytes", http_status=status)
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise RemoteError("too_large", f"fetch {safe_url(url)}: over {max_bytes} bytes", http_status=status)
        chunks.append(chunk)
    body = b"".join(chunks)
    charset = response.charset_encoding
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except LookupError:  # a charset name Python does not know
            pass
    return body


# -- text extraction ----------------------------------------------------------
def extract_text(html: str | bytes, url: str | None = None) -> str:
    """Main text by trafilatura; the whole visible text by lexbor when
    trafilatura is unavailable or finds nothing (short or unusual pages)."""
    return _trafilatura_text(html, url) or _lexbor_text(html)


_trafilatura_broken = False


def _trafilatura_text(html: str | bytes, url: str | None) -> str:
    global _trafilatura_broken
    if _trafilatura_broken:
        return ""
    try:
        import trafilatura  # heavy import, and it breaks when lxml lacks html.clean
    except ImportError as exc:
        _trafilatura_broken = True
        log.warning("trafilatura unavailable (%s); using plain lexbor text extraction", exc)
        return ""
    text = trafilatura.extract(html, url=url, include_comments=False, include_tables=True)
    return (text or "").strip()


def _lexbor_text(html: str | bytes) -> str:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    root = tree.body or tree.root
    if root is None:
        return ""
    for node in root.css(", ".join(BOILERPLATE_TAGS)):
        node.decompose()
    lines = (" ".join(line.split()) for line in root.text(separator="\n").splitlines())
    return "\n".join(line for line in lines if line)
