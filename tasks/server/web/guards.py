"""What stands between a request and the pages of `searchlake serve`, from
the outside in: security headers on every answer and no request that
changes something from other sites; only requests addressed to an allowed
host name (DNS rebinding); with SEARCHLAKE_SERVE_TOKEN set, only requests
that carry the token (see Access); bodies read up to a size limit.

A request that changes something (any method but GET, HEAD and OPTIONS)
must show where it comes from: an Origin (or, without one, a Referer) of
this server itself. `Origin: null` (a sandboxed frame, a file:// page, a
redirect from elsewhere) and a request naming neither are refused, since a
browser says where a cross-site form came from and an old or stripped one
may say nothing. A program is not a browser: a request that carries the
server's token or its owner's key in `Authorization: Bearer` (which no
cross-site page can make a browser send) needs neither. The page's own
forms send their Origin: its Referrer-Policy is `same-origin`, under which
browsers name the page's own origin to it and nothing to other sites
(`no-referrer` would make them send `Origin: null`).

Refusals are one line: `{"error": "..."}` on the API routes (/api/...),
plain text elsewhere."""

from __future__ import annotations

import hmac
from hashlib import sha256
from http.cookies import CookieError, SimpleCookie
from urllib.parse import quote, urlsplit

from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_COOKIE = "searchlake_session"
# The login form and what it is drawn with need no token.
OPEN_PATHS = ("/login", "/static/")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


def refusal(scope: Scope, status: int, message: str) -> Response:
    if scope["path"].startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return PlainTextResponse(message, status_code=status)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


# Methods that change nothing: they stay open to links from anywhere.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CROSS_SITE = ("a request that changes something must come from this server's own page (its Origin) "
              "or carry the server's token; cross-site, `Origin: null` and unnamed requests are refused")


class _Guard:
    """Security headers on every answer; nothing changed by other sites."""

    def __init__(self, app: ASGIApp, access: "Access"):
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] not in SAFE_METHODS and not self._from_here(_headers(scope)):
            await refusal(scope, 403, CROSS_SITE)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                         (b"referrer-policy", b"same-origin"), (b"x-frame-options", b"DENY")]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


    def _from_here(self, headers: dict[str, str]) -> bool:
        """A request that changes something: from this server's page, or from a program with its key."""
        if headers.get("sec-fetch-site") == "cross-site":
            return False
        origin = headers.get("origin") or headers.get("referer")  # a browser sends Origin; an old one a Referer
        if origin is not None:
            return _same_host(origin, headers.get("host", ""))  # `null` is no host: refused
        return self.access.has_key(headers)


def _same_host(url: str, host: str) -> bool:
    try:
        return bool(host) and urlsplit(url).netloc == host
    except ValueError:  # not a URL at all
        return False


class _BodyLimit:
    """Reads a request's body before the app does, up to `limit` bytes, and
    hands it on whole. A larger body is refused (413) without reading the
    rest: at once when its Content-Length says so, else as soon as what
    arrived passes the limit."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = refusal(scope, 413, f"the request body is larger than {self.limit} bytes")
        if _declared_length(scope) > self.limit:
            await too_large(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before sending its body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)


def _declared_length(scope: Scope) -> int:
    # uvicorn refuses a Content-Length that is not a number before the app sees it
    value = _headers(scope).get("content-length", "").strip()
    return int(value) if value.isdigit() else 0


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then the connection's own messages (a
    streaming answer listens there for the client leaving)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


class Access:
    """Who may use the server. With a token configured, a request carries it
    as `Authorization: Bearer <token>`, or carries the session cookie the
    login form sets (an HMAC of the token: the cookie proves the token
    without being it). The server's own user carries the server's key
    (tasks/server/handoff.py, ServeRecord.key) instead."""

    def __init__(self, token: str | None, owner_key: str | None = None):
        self.token = token
        self.owner_key = owner_key
        self.session = hmac.new(token.encode(), b"searchlake serve session", sha256).hexdigest() if token else None

    @property
    def needs_token(self) -> bool:
        return self.token is not None

    def opens_with(self, token: str) -> bool:
        return _same(token, self.token)

    def is_owner(self, headers: dict[str, str]) -> bool:
        return _same(_bearer(headers), self.owner_key)

    def has_key(self, headers: dict[str, str]) -> bool:
        """The request carries the token or the owner's key as a Bearer
        credential: a program, since no page of another site can make a
        browser send it (the session cookie does not count: browsers send it)."""
        return _same(_bearer(headers), self.token) or self.is_owner(headers)

    def admits(self, headers: dict[str, str]) -> bool:
        return (not self.needs_token or _same(_bearer(headers), self.token) or self.is_owner(headers)
                or _same(_cookie(headers, SESSION_COOKIE), self.session))


def _same(given: str | None, expected: str | None) -> bool:
    # compare_digest: the time taken says nothing about how much of a guess was right
    return given is not None and expected is not None and hmac.compare_digest(given.encode(), expected.encode())


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def _cookie(headers: dict[str, str], name: str) -> str | None:
    try:
        morsel = SimpleCookie(headers.get("cookie", "")).get(name)
    except CookieError:
        return None
    return morsel.value if morsel else None


class _TokenGate:
    """Refuses requests that Access does not admit: a browser asking for a
    page is sent to the login form, anything else gets a 401."""

    def __init__(self, app: ASGIApp, access: Access):
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope) if scope["type"] == "http" else {}
        if scope["type"] != "http" or scope["path"].startswith(OPEN_PATHS) or self.access.admits(headers):
            await self.app(scope, receive, send)
            return
        await _ask_for_token(scope, headers)(scope, receive, send)


def _ask_for_token(scope: Scope, headers: dict[str, str]) -> Response:
    if scope["method"] == "GET" and "text/html" in headers.get("accept", ""):
        query = scope.get("query_string", b"").decode("latin-1")
        wanted = scope["path"] + (f"?{query}" if query else "")
        return RedirectResponse(f"/login?next={quote(wanted, safe='')}", status_code=303)
    response = refusal(scope, 401, "this server needs its token (Authorization: Bearer …)")
    response.headers["www-authenticate"] = "Bearer"
    return response


def protect(app: ASGIApp, allowed_hosts: list[str], access: Access, max_body_bytes: int) -> ASGIApp:
    return _Guard(TrustedHostMiddleware(_TokenGate(_BodyLimit(app, max_body_bytes), access),
                                        allowed_hosts=allowed_hosts), access)
