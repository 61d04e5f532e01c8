"""One deadline for a whole HTTP exchange, enforced at the socket.

httpx's timeouts apply per socket operation, so a server sending one header
line a second never trips them. `deadline(seconds)` bounds everything sent
and received inside it — connect, TLS, headers, body, every redirect and
retry. `DeadlineTransport` is an httpx transport over httpcore's connection
pool (both public APIs) whose network layer cuts every socket operation's
timeout to what is left of the current deadline.
tests/common/test_http.py checks it against a trickling server."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

_deadline: ContextVar[float | None] = ContextVar("searchlake_http_deadline", default=None)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Everything sent and received inside must finish within `seconds`;
    past it the pending read, write or connect fails as a timeout. Nested
    deadlines: the earlier one wins."""
    if seconds is None:
        yield
        return
    end = time.monotonic() + seconds
    current = _deadline.get()
    token = _deadline.set(end if current is None else min(current, end))
    try:
        yield
    finally:
        _deadline.reset(token)


def time_left() -> float | None:
    """Seconds left before the current deadline; None when there is none."""
    end = _deadline.get()
    return None if end is None else end - time.monotonic()


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """A socket operation's timeout cut to what is left of the deadline."""
    left = time_left()
    if left is None:
        return timeout
    if left <= 0:
        raise error("the deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's socket layer with every timeout cut to the current deadline."""

    def __init__(self, backend: httpcore.NetworkBackend):
        self._backend = backend

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_tcp(host, port, _bounded(timeout, httpcore.ConnectTimeout),
                                                         local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_unix_socket(
            path, _bounded(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# httpcore's errors as httpx's (the most specific class that matches wins),
# as httpx's own transport maps them.
_HTTPX_ERROR = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        mapped = next((_HTTPX_ERROR[cls] for cls in type(exc).__mro__ if cls in _HTTPX_ERROR), None)
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc


class _Body(httpx.SyncByteStream):
    def __init__(self, parts: Iterable[bytes]):
        self._parts = parts

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._parts

    def close(self) -> None:
        if hasattr(self._parts, "close"):
            self._parts.close()


class DeadlineTransport(httpx.BaseTransport):
    """httpx's default transport (no proxy, certificates verified, HTTP/1.1,
    httpx's default pool limits), over a network layer that honours `deadline`."""

    def __init__(self) -> None:
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(), max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(httpcore.SyncBackend()))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        with _as_httpx_errors():
            answer = self._pool.handle_request(core_request)
        return httpx.Response(status_code=answer.status, headers=answer.headers, stream=_Body(answer.stream),
                              extensions=answer.extensions)

    def close(self) -> None:
        self._pool.close()
