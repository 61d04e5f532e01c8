"""URL rules of the contract: which schemes may enter the lake, and how a
missing `source_id` is derived so that anyone can reproduce it.

Normalization (applied only to derive identity; the item keeps its URL):
 1. trim surrounding whitespace;
 2. lower-case the scheme and the host; drop user info;
 3. drop the port when it is the scheme's default (80 for http, 443 for https);
 4. an empty path becomes "/";
 5. drop the fragment;
 6. drop tracking parameters: any name starting with "utm_", and the names in
    TRACKING_PARAMETERS; keep blank values; sort the rest by (name, value)
    and re-encode them with application/x-www-form-urlencoded quoting.
source_id = first 32 hex digits of sha256(normalized URL as UTF-8).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from schemas.errors import UserError

WEB_SCHEMES = frozenset({"http", "https"})
LAKE_SCHEMES = WEB_SCHEMES | {"file"}
DEFAULT_PORTS = {"http": 80, "https": 443}
TRACKING_PARAMETERS = frozenset(
    {"gclid", "gbraid", "wbraid", "dclid", "fbclid", "msclkid", "yclid", "igshid",
     "mc_cid", "mc_eid", "_ga", "_gl", "mkt_tok", "twclid", "li_fat_id"}
)


_HAS_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\s]")
# C0 controls (NUL, tab, newline, ...), DEL and C1 controls: never part of a
# URL, and a way to make one URL read differently by different parsers.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class UnsafeURL(UserError, ValueError):
    """A URL whose scheme may not enter the lake."""


def url_scheme(url: str) -> str:
    head, sep, _ = url.strip().partition(":")
    return head.lower() if sep else ""


def check_lake_url(url: str) -> str:
    """Return the URL unchanged when its scheme may enter the lake."""
    control = _CONTROL.search(url)
    if control:
        raise UnsafeURL(f"URL holds a control character ({ord(control.group()):#04x}) at position {control.start()}")
    scheme = url_scheme(url)
    if scheme not in LAKE_SCHEMES:
        shown = scheme or "none"
        raise UnsafeURL(f"scheme {shown!r} is not allowed (http, https or file)")
    if scheme in WEB_SCHEMES and not _HAS_HOST.match(url.strip()):
        raise UnsafeURL("URL has no host")
    return url


def file_url_path(url: str) -> str | None:
    """The local absolute path a file: URL names (percent-decoded, query and
    fragment dropped); None when it names another host or no absolute path."""
    parts = urlsplit(url.strip())
    if parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    return path if path.startswith("/") else None


def file_name_of(url: str) -> str:
    """A file: URL's last part as written (刹车片.md, not its percent-encoding)."""
    return unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]) or url


def location_of(url: str) -> str:
    """Where a source is, told apart from its neighbours in a narrow column:
    a file's name, a web page's host (without www.) and path."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        return file_name_of(url)
    if parts.scheme in WEB_SCHEMES:
        query = f"?{parts.query}" if parts.query else ""
        return unquote(parts.netloc.lower().removeprefix("www.") + parts.path.rstrip("/") + query)
    return url


def _is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in TRACKING_PARAMETERS


# The common case, already normal but for the case of scheme and host: an
# http(s) URL with a plain ASCII host, no port, user info, query or fragment,
# and a path of plain ASCII URL characters. For it the rules above reduce to
# lower-casing the scheme and host and giving an empty path "/" (the general
# code below gives the same string, only slower).
_PLAIN_URL = re.compile(r"([Hh][Tt][Tt][Pp][Ss]?)://([A-Za-z0-9.\-]+)(/[A-Za-z0-9\-._~/%!$&'()*+,;=:@]*)?")


def normalize_url(url: str) -> str:
    plain = _PLAIN_URL.fullmatch(url)
    if plain:
        scheme, host, path = plain.groups()
        return f"{scheme.lower()}://{host.lower()}{path or '/'}"
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port in (None, DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", _clean_query(parts.query), ""))


def _clean_query(query: str) -> str:
    if not query:
        return ""
    kept = sorted((k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not _is_tracking(k))
    return urlencode(kept)


def source_id_for(url: str) -> str:
    return hashlib.sha256(normalize_url(url).encode("utf-8")).hexdigest()[:32]


def domain_of(url: str) -> str:
    host = (urlsplit(url.strip()).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host
