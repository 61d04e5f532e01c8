"""A deadline for receiving a request, so slow clients cannot hold
`searchlake serve`'s connections open (slowloris).

uvicorn has no such timeout: `timeout_keep_alive` counts only the idle time
between requests and starts again with every byte received, and an ASGI
middleware sees a request only once its headers are in. So a client that
sends half a header line and then a byte now and then kept its connection
(and a file descriptor) for as long as it liked, before any token check.

RequestDeadline is uvicorn's own h11 protocol with one addition: the
request line, headers and body of each request must all arrive within
`request_timeout` seconds — counted from the connection's opening, or on a
kept-alive connection from the next request's first byte — or the
connection is closed. Once a request is in, the deadline is off: a slow
answer (a stream of events) is not the client's doing.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

# Their side of the connection while a request is on its way: none started
# yet (IDLE), or headers in and body still coming (SEND_BODY).
_RECEIVING = (h11.IDLE, h11.SEND_BODY)


class RequestDeadline(H11Protocol):
    def __init__(self, *args: Any, request_timeout: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.request_timeout = request_timeout
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state in _RECEIVING:
            self._arm()  # the next request's first byte on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state not in _RECEIVING:
            self._disarm()  # the request is in (or the connection is over)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.conn.their_state in _RECEIVING and not self.transport.is_closing():
            log.debug("closed a connection whose request took longer than %s s to arrive", self.request_timeout)
            self.transport.close()  # an app waiting for the body hears that the client left


def with_request_deadline(seconds: float) -> functools.partial:
    """What uvicorn.Config(http=…) takes to serve with this deadline."""
    return functools.partial(RequestDeadline, request_timeout=seconds)
