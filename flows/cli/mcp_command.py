"""`searchlake mcp`: the Model Context Protocol over stdin and stdout, for an
agent (a desktop assistant, a coding agent) that starts the command and
keeps it running (flows/mcp_server.py; docs/mcp.md).

stdout carries the protocol and nothing else. While the server runs, the
SDK points the process's file descriptor 1 at stderr (so libraries, the
engine and child processes — Prefect's temporary server among them — write
there) and serves the protocol from a private copy; once it runs,
Python's own sys.stdout is stderr too, so that nothing a library printed
waits in its buffer to reach the protocol when the SDK gives the
descriptor back. Logs go to stderr, with every secret searchlake knows
taken out."""

from __future__ import annotations

import logging
import sys
from contextlib import asynccontextmanager

from flows.cli.common import app, settings


@app.command("mcp")
def mcp_command() -> None:
    """Serve the Model Context Protocol over stdin/stdout for agents: tools to research a
    question, read reports, list tasks, read top sources and query the lake with SQL (see docs/mcp.md)."""
    from flows.launcher import ResearchLauncher
    from flows.mcp_server import build_server
    config = settings()  # a usable home, or one line before the protocol starts
    log_to_stderr()
    launcher = ResearchLauncher(config)

    @asynccontextmanager
    async def serving(server):
        keep_python_output_off_the_protocol()
        # Prefect's temporary server starts now, its output pointed away from the protocol like ours
        launcher.warm_up()
        yield {}

    build_server(config, launcher, lifespan=serving).run("stdio")


def keep_python_output_off_the_protocol() -> None:
    sys.stdout.flush()
    sys.stdout = sys.stderr


class RedactingFormatter(logging.Formatter):
    """Log lines (a traceback included) with every secret searchlake knows taken out."""

    def format(self, record: logging.LogRecord) -> str:
        from tasks.common.redaction import redact
        return redact(super().format(record))


def log_to_stderr() -> None:
    """Warnings and errors of every library on stderr; set before the SDK
    would set its own (logging.basicConfig does nothing once a handler is there)."""
    from tasks.common.redaction import register_environment
    register_environment()  # the keys and tokens of the environment are secrets to take out
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)  # libraries that log more (Prefect's INFO) are heard in their own logs
    handler.setFormatter(RedactingFormatter("searchlake mcp: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
