"""An MCP client for tests, with the SDK's own client: a session, held open
for a whole module, driven from plain (synchronous) tests through an anyio
portal — the event loop lives in a thread of its own, the session in one
task of it, as the SDK's context managers want."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession

RESEARCH_TIMEOUT = 600.0  # s: a run under load, Prefect's temporary server starting first


@dataclass
class Progress:
    """The progress notifications of one call: (progress, total, message)."""

    seen: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))


class McpSession:
    """A connected, initialized ClientSession, called from synchronous code."""

    def __init__(self, portal: BlockingPortal, session: ClientSession, stray: list):
        self.portal = portal
        self.session = session
        self.stray = stray  # what reached the client that was not a protocol message

    def call(self, name: str, arguments: dict[str, Any] | None = None, progress: Progress | None = None,
             timeout: float = 120.0):
        return self.portal.call(lambda: self.session.call_tool(name, arguments or {}, read_timeout_seconds=timeout,
                                                               progress_callback=progress))

    def run(self, method: str, *args):
        """Any other request of the session (list_tools, read_resource, …)."""
        return self.portal.call(getattr(self.session, method), *args)


@contextmanager
def mcp_session(transport: Callable[[], AbstractAsyncContextManager]):
    """A session over `transport()` (the SDK's stdio or streamable HTTP
    client), open for the block."""
    stray: list = []

    async def on_message(message) -> None:
        if isinstance(message, Exception):  # a line on stdout that was not the protocol, a broken stream
            stray.append(message)

    @asynccontextmanager
    async def connected() -> AsyncIterator[ClientSession]:
        async with transport() as (read, write), ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            yield session

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(connected()) as session:
        yield McpSession(portal, session, stray)


def text_of(result) -> str:
    """The text of a tool result (its one text block)."""
    (block,) = result.content
    return block.text


@asynccontextmanager
async def http_transport(url: str, headers: dict[str, str]) -> AsyncIterator:
    """The SDK's streamable HTTP client, sending `headers` with every request."""
    import httpx2  # the SDK's HTTP client library
    from mcp.client.streamable_http import streamable_http_client
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=RESEARCH_TIMEOUT)) as http, \
            streamable_http_client(url, http_client=http) as streams:
        yield streams
