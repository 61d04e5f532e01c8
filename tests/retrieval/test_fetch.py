"""The page fetcher: address checks on every hop, limits, text extraction.

A real HTTP server on 127.0.0.1 covers the loopback refusal and a real fetch;
redirect checks use MockTransport with an injected resolver, so public and
private host names can be staged without DNS or internet.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

import tasks.retrieval.fetch
from tasks.common.settings import Settings
from tasks.retrieval.fetch import configured_hosts, extract_text, fetch_content, fetch_deadline, refusal_reason
from tasks.common.http import make_client
from schemas.errors import RemoteError
from tests.research_helpers import settings_with
from tests.net_helpers import TrickleServer, elapsed

PARAGRAPH = (
    "The evidence lake keeps every search answer as raw JSON next to Parquet tables, "
    "so analysts can query bundles with plain SQL and rebuild any report later."
)
ARTICLE = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Lake notes</title><script>var tracking = 1;</script></head>
<body>
  <nav><a href="/">Home</a> | <a href="/about">About</a></nav>
  <article>
    <h1>How the evidence lake works</h1>
    {''.join(f'<p>{PARAGRAPH} Paragraph {i}.</p>' for i in range(6))}
  </article>
  <footer>Copyright footer text</footer>
</body></html>"""


def settings(**overrides) -> Settings:
    return settings_with(**{"searxng_url": None, "http_timeout": 5.0, **overrides})


# -- a real server on loopback ------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    routes = {
        "/article": (200, "text/html; charset=utf-8", ARTICLE.encode()),
        "/data.json": (200, "application/json", b'{"a": 1}'),
        "/missing": (404, "text/html", b"<p>not here</p>"),
        "/big": (200, "text/html", b"<p>" + b"x" * 50_000 + b"</p>"),
    }

    def do_GET(self):
        if self.path == "/go":
            self.send_response(302)
            self.send_header("Location", "/article")
            self.end_headers()
            return
        status, ctype, body = self.routes.get(self.path, (404, "text/plain", b"?"))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture(scope="module")
def local_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def fetch(url, s=None, **kwargs):
    s = s or settings()
    with make_client(s) as client:
        return fetch_content(url, s, client, **kwargs)


def test_loopback_refused_by_default(local_server):
    with pytest.raises(RemoteError) as err:
        fetch(f"{local_server}/article")
    assert err.value.code == "blocked" and "loopback" in str(err.value)


def test_localhost_name_refused_by_default(local_server):
    port = local_server.rsplit(":", 1)[1]
    with pytest.raises(RemoteError) as err:
        fetch(f"http://localhost:{port}/article")
    assert err.value.code == "blocked"


def test_private_fetch_allowed_extracts_main_text(local_server):
    page = fetch(f"{local_server}/article", settings(allow_private_fetch=True))
    assert page.http_status == 200 and page.final_url == f"{local_server}/article"
    assert "How the evidence lake works" in page.text and "Paragraph 5" in page.text
    assert "tracking" not in page.text and "Home | About" not in page.text


def test_allow_list_host_is_fetched(local_server):
    page = fetch(f"{local_server}/go", allow_hosts=["127.0.0.1"])
    assert page.final_url == f"{local_server}/article" and "Paragraph 0" in page.text


def test_text_truncated_to_setting(local_server):
    page = fetch(f"{local_server}/article", settings(allow_private_fetch=True, content_max_chars=200))
    assert len(page.text) == 200


def test_http_error_not_html_and_too_large(local_server):
    s = settings(allow_private_fetch=True)
    with pytest.raises(RemoteError) as err:
        fetch(f"{local_server}/missing", s)
    assert err.value.code == "http_404" and err.value.http_status == 404
    with pytest.raises(RemoteError) as err:
        fetch(f"{local_server}/data.json", s)
    assert err.value.code == "not_html"
    with pytest.raises(RemoteError) as err:
        fetch(f"{local_server}/big", s, max_bytes=10_000)
    assert err.value.code == "too_large"


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd", "javascript:alert(1)", "ftp://example.com/x",
        "data:text/html,<p>x</p>", "http://", "not a url",
    ],
)
def test_non_http_schemes_refused(url):
    with pytest.raises(RemoteError) as err:
        fetch(url, settings(allow_private_fetch=True))  # even when private fetches are allowed
    assert err.value.code == "blocked"


# -- redirects, staged with a resolver and a mock network ---------------------------
DNS = {
    "public.example": ["93.184.216.34"],
    "also-public.example": ["2606:4700::1111"],
    "metadata.example": ["169.254.169.254"],
    "mixed.example": ["93.184.216.35", "10.0.0.7"],
    "searx.lan": ["192.168.1.20"],
}


def resolver(host: str, port: int) -> list[str]:
    return DNS[host]


class Network:
    """Answers by Host header, since plain-http requests go to the checked IP."""

    def __init__(self, pages: dict[str, httpx.Response]):
        self.pages = pages
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = request.headers["Host"] + request.url.path
        return self.pages.get(key, httpx.Response(404))


def mock_fetch(url, pages, s=None, **kwargs):
    s = s or settings()
    network = Network(pages)
    with make_client(s, transport=httpx.MockTransport(network)) as client:
        return fetch_content(url, s, client, resolver=resolver, **kwargs), network


def html(text: str) -> httpx.Response:
    return httpx.Response(200, text=f"<html><body><p>{text}</p></body></html>", headers={"Content-Type": "text/html"})


def redirect(location: str, status: int = 302) -> httpx.Response:
    return httpx.Response(status, headers={"Location": location})


def test_public_host_fetched_and_pinned_to_checked_address():
    page, network = mock_fetch("http://public.example/a", {"public.example/a": html("hello public")})
    assert page.text == "hello public" and page.final_url == "http://public.example/a"
    (req,) = network.requests
    assert req.url.host == "93.184.216.34" and req.headers["Host"] == "public.example"


def test_redirect_to_private_host_refused():
    pages = {"public.example/a": redirect("http://metadata.example/latest/meta-data/")}
    with pytest.raises(RemoteError) as err:
        mock_fetch("http://public.example/a", pages)
    assert err.value.code == "blocked" and "169.254.169.254" in str(err.value)


def test_redirect_to_private_literal_and_to_other_schemes_refused():
    for location in ("http://127.0.0.1:9000/admin", "http://[::1]/", "file:///etc/passwd", "javascript:alert(1)"):
        with pytest.raises(RemoteError) as err:
            mock_fetch("http://public.example/a", {"public.example/a": redirect(location)})
        assert err.value.code == "blocked", location


def test_any_private_address_among_several_is_refused():
    with pytest.raises(RemoteError) as err:
        mock_fetch("http://mixed.example/", {"mixed.example/": html("x")})
    assert err.value.code == "blocked" and "10.0.0.7" in str(err.value)


def test_relative_redirects_followed_and_checked():
    pages = {
        "public.example/a": redirect("/b", 301),
        "public.example/b": redirect("https://also-public.example/c", 307),
        "also-public.example/c": html("arrived"),
    }
    page, network = mock_fetch("http://public.example/a", pages)
    assert page.text == "arrived" and page.final_url == "https://also-public.example/c"
    assert len(network.requests) == 3


def test_too_many_redirects():
    pages = {f"public.example/{i}": redirect(f"/{i + 1}") for i in range(10)}
    with pytest.raises(RemoteError) as err:
        mock_fetch("http://public.example/0", pages)
    assert err.value.code == "too_many_redirects"


def test_configured_private_endpoint_allowed():
    s = settings(searxng_url="http://searx.lan:8080")
    assert configured_hosts(s) == {"searx.lan"}
    page, _ = mock_fetch("http://searx.lan:8080/about", {"searx.lan:8080/about": html("about searx")}, s,
                         allow_hosts=configured_hosts(s))
    assert page.text == "about searx"
    with pytest.raises(RemoteError):
        mock_fetch("http://searx.lan:8080/about", {}, s)  # not without the allow-list


def test_timeout_and_declared_size():
    def slow(request):
        raise httpx.ReadTimeout("slow", request=request)

    s = settings()
    with make_client(s, transport=httpx.MockTransport(slow)) as client:
        with pytest.raises(RemoteError) as err:
            fetch_content("http://public.example/", s, client, resolver=resolver)
    assert err.value.code == "timeout"

    huge = httpx.Response(200, headers={"Content-Type": "text/html", "Content-Length": str(10**9)}, content=b"")
    with pytest.raises(RemoteError) as err:
        mock_fetch("http://public.example/", {"public.example/": huge})
    assert err.value.code == "too_large"


# -- pieces -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "address,reason",
    [
        ("127.0.0.1", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"), ("192.168.0.1", "private"), ("169.254.169.254", "link-local"),
        ("fe80::1%eth0", "link-local"), ("224.0.0.1", "multicast"), ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"), ("100.64.0.1", "non-global"),
        ("93.184.216.34", None), ("2606:4700::1111", None),
    ],
)
def test_refusal_reason(address, reason):
    assert refusal_reason(address) == reason


def test_extract_falls_back_to_lexbor(monkeypatch):
    monkeypatch.setattr(tasks.retrieval.fetch, "_trafilatura_text", lambda html, url: "")
    text = extract_text(ARTICLE.encode(), "http://x/")
    assert text.startswith("How the evidence lake works") and "Copyright" not in text and "tracking" not in text


def test_extract_with_trafilatura():
    pytest.importorskip("trafilatura", exc_type=ImportError)  # skipped where lxml lacks html.clean
    assert "Paragraph 3" in tasks.retrieval.fetch._trafilatura_text(ARTICLE, "http://x/")


# -- one deadline for the whole fetch ----------------------------------------------------
def test_a_server_trickling_headers_is_cut_off_at_the_fetch_deadline():
    server = TrickleServer(interval=0.5, lines=120)  # a minute of header lines, each within any read timeout
    s = settings(http_timeout=1.0, allow_private_fetch=True)
    try:
        took, outcome = elapsed(lambda: fetch(server.url + "/article", s))
    finally:
        server.close()
    assert isinstance(outcome, RemoteError) and outcome.code == "timeout", outcome
    assert took < 5 * fetch_deadline(s)  # ends near the 2 s deadline, not after a minute


class _SlowHops(BaseHTTPRequestHandler):
    """Every hop answers quickly enough for a read timeout, but a chain of
    redirects adds up: only a deadline over the whole fetch stops it."""

    def do_GET(self):
        hop = int(self.path.strip("/") or 0)
        time.sleep(0.6)
        self.send_response(302)
        self.send_header("Location", f"/{hop + 1}" if hop < 4 else "/0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_redirect_hops_share_one_deadline():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHops)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    s = settings(http_timeout=0.8, allow_private_fetch=True)  # 1.6 s for the whole fetch; 6 hops take 3.6 s
    try:
        outcome = elapsed(lambda: fetch(f"http://127.0.0.1:{server.server_address[1]}/0", s))[1]
    finally:
        server.shutdown()
        server.server_close()
    assert isinstance(outcome, RemoteError) and outcome.code == "timeout", outcome
