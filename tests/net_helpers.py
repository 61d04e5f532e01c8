"""Hostile servers on 127.0.0.1 for tests of the outbound HTTP path."""

from __future__ import annotations

import socket
import threading
import time


class TrickleServer:
    """Answers every connection with a status line, then one header line per
    `interval` seconds for `lines` lines: each socket read succeeds, so only a
    deadline over the whole exchange stops a client."""

    def __init__(self, interval: float = 1.0, lines: int = 60):
        self.interval, self.lines = interval, lines
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(None)
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
            for n in range(self.lines):
                if self._stop.wait(self.interval):
                    break
                conn.sendall(f"X-Slow-{n}: still coming\r\n".encode())
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


def elapsed(fn) -> tuple[float, object]:
    """(seconds taken, what fn raised or returned)."""
    started = time.monotonic()
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        result = exc
    return time.monotonic() - started, result
