"""`searchlake serve`: the web page and the progress-event API on one server.

    GET  /health                          {"status": "ok", "home": ...}
    GET  /runs                            runs that have an events file (JSON)
    GET  /runs/{task_id}/{run_id}/events  text/event-stream of the run's events
    and the pages of tasks/server/web/app.py, and the endpoints it is given
    (/mcp: the Model Context Protocol, flows/mcp_server.py).

The stream sends each JSONL line of the run's log as `id: N` + `data: {json}`
and keeps following the file until the run's terminal event (the pipeline's
complete or error) or until the client goes away; a run whose process died
writes none, so a silent stream asks the lake every few seconds whether its
run reads interrupted (the runs view) and ends with that error. `Last-Event-ID` resumes
after the N-th event (a browser's EventSource sends it when it reconnects);
`?follow=0` sends what is there and closes. Streams read the JSONL file, and
the catalog only in those short read-only sessions: it is never held while
a stream is open.

Starlette (with sse-starlette for the stream) under uvicorn. It binds to
127.0.0.1 unless told otherwise, and beyond the loopback only with
SEARCHLAKE_SERVE_TOKEN set: every request must then carry the token. It
answers only requests addressed to its allowed host names
(SEARCHLAKE_SERVE_ALLOWED_HOSTS, DNS rebinding) and refuses requests from
other sites that change something (tasks/server/web/guards.py).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import datetime, timezone
from ipaddress import ip_address
from pathlib import Path
from typing import Protocol

import uvicorn
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tasks.common.settings import Settings, secret_value
from tasks.lake.files import run_logs_root
from tasks.server.events import events_path, follow_events, list_runs
from tasks.server.request_deadline import with_request_deadline
from tasks.server.web.app import Launcher, page_routes
from tasks.server.web.pages import run_interruption
from tasks.server.web.guards import Access, protect
from schemas.errors import UserError

KEEPALIVE_SECONDS = 15.0
POLL_SECONDS = 0.1
ASK_EVERY_SECONDS = 5.0  # how often a silent stream asks the lake whether its run reads interrupted


class ServeError(UserError, RuntimeError):
    """The server cannot start (bad port, address in use): one line for the user."""


class Endpoint(Protocol):
    """Another protocol served beside the page, behind the same guards: an
    ASGI app answering at `path`, and what it needs running while the server
    serves (the MCP endpoint of flows/mcp_server.py and its sessions)."""

    path: str

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...
    def running(self) -> AbstractAsyncContextManager: ...


def build_app(settings: Settings, launcher: Launcher | None = None, *, host: str | None = None,
              owner_key: str | None = None, fingerprint_salt: str | None = None, poll: float = POLL_SECONDS,
              keepalive: float = KEEPALIVE_SECONDS, ask_every: float = ASK_EVERY_SECONDS,
              endpoints: Sequence[Endpoint] = ()) -> Starlette:
    """The app of a server bound to `host`; `owner_key` is the key of its
    record (tasks/server/handoff.py), which its own user's commands carry,
    and `fingerprint_salt` the salt of its settings' fingerprint there
    (without one, it runs no handed-over run); `endpoints` are served beside
    the page."""
    root = run_logs_root(settings)
    access = Access(secret_value(settings.serve_token), owner_key)

    def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "home": str(settings.home)})

    def runs(request: Request) -> JSONResponse:
        return JSONResponse({"runs": [
            {"task_id": r.task_id, "run_id": r.run_id, "events": f"/runs/{r.task_id}/{r.run_id}/events",
             "size": r.size, "modified": datetime.fromtimestamp(r.modified, timezone.utc).isoformat()}
            for r in list_runs(root)]})

    async def events(request: Request):
        task_id, run_id = request.path_params["task_id"], request.path_params["run_id"]
        try:
            path = events_path(root, task_id, run_id)  # checks both ids first: they become path parts
        except ValueError as exc:
            return JSONResponse({"error": f"invalid run id: {exc}"}, status_code=400)
        skip = request.headers.get("last-event-id", "0").strip() or "0"
        if not skip.isdigit():
            return JSONResponse({"error": "Last-Event-ID must be the number of an event"}, status_code=400)
        if not path.is_file():
            return JSONResponse({"error": f"no events for run {task_id}/{run_id}"}, status_code=404)
        follow = request.query_params.get("follow", "1") not in ("0", "false")

        async def ended() -> str | None:  # a run whose process died writes no last event: the lake says it
            return await run_in_threadpool(run_interruption, settings, run_id)

        return EventSourceResponse(_numbered(path, int(skip), follow, poll, ended, ask_every), ping=keepalive,
                                   headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    routes = [Route("/health", health), Route("/runs", runs),
              Route("/runs/{task_id}/{run_id}/events", events), *page_routes(settings, launcher, access, fingerprint_salt),
              *(Route(endpoint.path, endpoint) for endpoint in endpoints)]
    allowed_hosts = allowed_hosts_for(host or settings.serve_host, settings.serve_allowed_hosts)
    app = Starlette(routes=routes, lifespan=_running(endpoints))
    return protect(app, allowed_hosts, access, settings.serve_max_body_bytes)


def _running(endpoints: Sequence[Endpoint]):
    """The app's lifespan: every endpoint's machinery runs while the server serves."""
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as running:
            for endpoint in endpoints:
                await running.enter_async_context(endpoint.running())
            yield
    return lifespan


async def _numbered(path: Path, skip: int, follow: bool, poll: float, ended, ask_every: float):
    with open(path, encoding="utf-8") as handle:
        number = 0
        async for line, _ in follow_events(handle, follow=follow, poll=poll, ended=ended, ask_every=ask_every):
            number += 1
            if number > skip:
                yield ServerSentEvent(data=line, id=str(number))


# -- running it ---------------------------------------------------------------

def bind(host: str, port: int) -> socket.socket:
    """The listening socket, or one line saying why not (port 0 picks a free port)."""
    if not 0 <= port <= 65535:
        raise ServeError(f"--port must be between 0 and 65535, not {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ServeError(f"cannot serve on {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot serve on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost"})


def allowed_hosts_for(host: str, configured: list[str]) -> list[str]:
    """The host names requests may be addressed to: the loopback names (no
    other site's name can be them, and this machine's commands use them),
    the configured ones, and the address the server is bound to (unless
    that is every address)."""
    return sorted(LOOPBACK_NAMES | set(configured) | (set() if _is_wildcard(host) else {host}))


class Activity:
    """The app, counting the requests in flight and remembering when the
    last one ended, so the server can tell how long it has had nothing to do."""

    def __init__(self, app):
        self.app = app
        self.in_flight = 0
        self.last_request = time.monotonic()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.last_request = time.monotonic()

    def idle_seconds(self, last_work: float | None) -> float:
        """Seconds since the last request and the last piece of work ended
        (`last_work`: a monotonic time, None while work is in progress)."""
        if self.in_flight or last_work is None:
            return 0.0
        return time.monotonic() - max(self.last_request, last_work)


class WebServer:
    """uvicorn serving the app on an already bound socket, in this thread
    (`serve_forever`) or in a background one (`start`/`stop`, for tests)."""

    def __init__(self, app: Starlette, sock: socket.socket, request_timeout: float):
        self.sock = sock
        self.activity = Activity(app)
        # a request's headers and body must arrive within request_timeout (slowloris)
        # lifespan "on": the app starts its endpoints' machinery (build_app) before the first request
        self.server = uvicorn.Server(uvicorn.Config(self.activity, log_level="warning", lifespan="on",
                                                    timeout_graceful_shutdown=1,
                                                    http=with_request_deadline(request_timeout)))
        self.thread: threading.Thread | None = None
        self.stopped_idle = False

    def stop_when_idle(self, seconds: float, last_work: Callable[[], float | None]) -> None:
        """Stop serving once nothing happened for `seconds`: no request and no
        work (`last_work()`: when the last ended, None while one runs)."""
        def watch() -> None:
            while not self.server.should_exit:
                time.sleep(min(5.0, seconds / 4))
                if self.activity.idle_seconds(last_work()) >= seconds:
                    self.stopped_idle = True
                    self.server.should_exit = True
        threading.Thread(target=watch, daemon=True, name="searchlake-idle").start()

    @property
    def url(self) -> str:
        """Where this machine reaches the server (the loopback, when bound to every address)."""
        host, port = self.sock.getsockname()[:2]
        if _is_wildcard(host):
            host = "127.0.0.1" if self.sock.family == socket.AF_INET else "[::1]"
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}"

    def serve_forever(self) -> None:
        self.server.run(sockets=[self.sock])

    def start(self) -> "WebServer":
        self.thread = threading.Thread(target=self.serve_forever, daemon=True, name="searchlake-serve")
        self.thread.start()
        while not self.server.started and self.thread.is_alive():
            self.thread.join(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> "WebServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def make_server(settings: Settings, host: str | None = None, port: int | None = None,
                launcher: Launcher | None = None, **options) -> WebServer:
    """The server, bound but not yet serving; beyond the loopback only with a token."""
    host = host or settings.serve_host
    port = settings.serve_port if port is None else port
    if not _is_loopback(host) and settings.serve_token is None:
        raise ServeError(f"serving on {host} needs SEARCHLAKE_SERVE_TOKEN (every request must then carry it); "
                         "without one, serve on 127.0.0.1")
    sock = bind(host, port)
    return WebServer(build_app(settings, launcher, host=host, **options), sock, settings.serve_request_timeout)


def _is_loopback(host: str) -> bool:
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "")
