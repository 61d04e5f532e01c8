"""Bounds on a whole command: its time and its memory."""

from __future__ import annotations

import _thread
import resource
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

MB = 1024 * 1024


@contextmanager
def within(seconds: float, stopped: BaseException) -> Iterator[None]:
    """Run the block for at most `seconds`, then raise `stopped` in it
    (through the main thread's interrupt: it reaches the block wherever it
    is, a query or the formatting of its rows). The block has its own
    handler of the interrupt, so whatever handler a library installed
    before cannot swallow it; a real Ctrl-C is still a KeyboardInterrupt.
    Call from the main thread."""
    lock = threading.Lock()
    state = {"running": True, "fired": False, "interrupted": False}

    def stop() -> None:
        with lock:
            if state["running"]:
                state["fired"] = True
                _thread.interrupt_main(signal.SIGINT)

    def interrupted(signum, frame) -> None:
        state["interrupted"] = True
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGINT, interrupted)
    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield
    except BaseException:  # the interrupt, or what the engine made of it ("Query interrupted")
        if state["fired"]:
            raise stopped from None
        if state["interrupted"]:  # Ctrl-C, even where the engine turned it into "Query interrupted"
            raise KeyboardInterrupt from None
        raise
    finally:
        with lock:
            state["running"] = False
        timer.cancel()
        signal.signal(signal.SIGINT, before)


@contextmanager
def memory_capped(megabytes: int) -> Iterator[None]:
    """Lower the process's data limit to `megabytes` for the block: past it an
    allocation fails (DuckDB's OutOfMemoryException, Python's MemoryError)
    rather than the machine swapping."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    wanted = megabytes * MB
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
