"""`searchlake serve`: follow runs' progress events over Server-Sent Events.

    GET /health                          {"status": "ok"}
    GET /runs                            runs that have an events file
    GET /runs/{task_id}/{run_id}/events  text/event-stream of the run's events

The stream sends each JSONL line of the run's log as `id: N` + `data: {json}`
and keeps following the file until the run's terminal event (the pipeline's
complete or error) or until the client goes away. `Last-Event-ID` resumes
after the N-th event; `?follow=0` sends what is there and closes.

Built on the standard library's ThreadingHTTPServer rather than
starlette/uvicorn: it serves a few local followers, a thread per stream is
cheap at that scale, following a growing file is plain blocking I/O, and a
test can start it on port 0 in a thread without an event loop. There is no
authentication, so it binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from tasks.common.settings import Settings
from tasks.lake.files import run_logs_root
from tasks.progress.events import events_path, follow_lines, list_runs, parse_line

log = logging.getLogger(__name__)
KEEPALIVE_SECONDS = 15.0
POLL_SECONDS = 0.1


class EventServer(ThreadingHTTPServer):
    daemon_threads = True  # a stream left open must not keep the process alive

    def __init__(self, address: tuple[str, int], root: Path, *, poll: float = POLL_SECONDS,
                 keepalive: float = KEEPALIVE_SECONDS):
        self.root = root
        self.poll = poll
        self.keepalive = keepalive
        self.stopping = threading.Event()
        super().__init__(address, EventHandler)

    def shutdown(self) -> None:
        # Streams poll this flag, so open followers end instead of holding threads.
        self.stopping.set()
        super().shutdown()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class BadRequest(Exception):
    pass


class EventHandler(BaseHTTPRequestHandler):
    server: EventServer
    server_version = "searchlake"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        url = urlsplit(self.path)
        # Split before unquoting: an encoded '/' must stay inside its segment,
        # where the identifier check refuses it.
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        query = parse_qs(url.query)
        try:
            if parts == ["health"]:
                self._json(HTTPStatus.OK, {"status": "ok"})
            elif parts == ["runs"]:
                self._json(HTTPStatus.OK, {"runs": self._runs()})
            elif len(parts) == 4 and parts[0] == "runs" and parts[3] == "events":
                self._stream(parts[1], parts[2], follow=query.get("follow", ["1"])[0] not in ("0", "false"))
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
        except BadRequest as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client left; nothing to answer

    # -- responses
    def _json(self, status: HTTPStatus, doc: dict) -> None:
        body = json.dumps(doc, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _runs(self) -> list[dict]:
        return [{"task_id": r.task_id, "run_id": r.run_id, "events": f"/runs/{r.task_id}/{r.run_id}/events",
                 "size": r.size, "modified": datetime.fromtimestamp(r.modified, timezone.utc).isoformat()}
                for r in list_runs(self.server.root)]

    def _stream(self, task_id: str, run_id: str, *, follow: bool) -> None:
        path = self._run_path(task_id, run_id)
        if not path.is_file():
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no events for run {task_id}/{run_id}"})
            return
        skip = self._last_event_id()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Accel-Buffering", "no")  # proxies must not hold events back
        self.end_headers()
        with open(path, encoding="utf-8") as handle:
            self._send_events(handle, skip, follow)

    def _run_path(self, task_id: str, run_id: str) -> Path:
        try:
            return events_path(self.server.root, task_id, run_id)  # checks both ids first
        except ValueError as exc:
            raise BadRequest(f"invalid run id: {exc}") from None

    def _last_event_id(self) -> int:
        value = self.headers.get("Last-Event-ID", "0").strip() or "0"
        if not value.isdigit():
            raise BadRequest("Last-Event-ID must be the number of an event")
        return int(value)

    def _send_events(self, handle, skip: int, follow: bool) -> None:
        number, finished = 0, False
        last_write = time.monotonic()

        def stop() -> bool:
            return finished or self.server.stopping.is_set()

        lines = follow_lines(handle, stop, self.server.poll) if follow else iter(handle)
        for line in lines:
            if line is None:  # waiting for the run: keep the connection visibly alive
                if time.monotonic() - last_write >= self.server.keepalive:
                    self._write(": keep-alive\n\n")
                    last_write = time.monotonic()
                continue
            event = parse_line(line)
            if event is None:
                continue  # a torn or foreign line must not end everyone's stream
            number += 1
            finished = event.is_terminal
            if number > skip:
                self._write(f"id: {number}\ndata: {line.strip()}\n\n")
                last_write = time.monotonic()

    def _write(self, text: str) -> None:
        self.wfile.write(text.encode("utf-8"))
        self.wfile.flush()


def make_server(settings: Settings, host: str | None = None, port: int | None = None, **options) -> EventServer:
    """The server, bound but not yet serving (port 0 picks a free port)."""
    host = host or settings.serve_host
    port = settings.serve_port if port is None else port
    if not _is_loopback(host):
        log.warning("serving progress events on %s without authentication", host)
    return EventServer((host, port), run_logs_root(settings), **options)


def _is_loopback(host: str) -> bool:
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    """Serve until interrupted (Ctrl-C)."""
    server = make_server(settings, host, port)
    print(f"serving progress events of {server.root} at {server.url}/runs", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stopping.set()
        server.server_close()
