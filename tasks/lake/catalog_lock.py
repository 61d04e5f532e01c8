"""The embedded catalog's file lock: searchlake's own writers take turns on
an embedded catalog rather than fail each other's commits (see
tasks/lake/catalog.py). Another process is waited for up to the lock
timeout; threads of this process take turns without one."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from filelock import FileLock, Timeout

from tasks.common.settings import Settings
from tasks.lake.engine_errors import CatalogBusy


def session_lock(settings: Settings, purpose: str, read_only: bool):
    """The embedded catalog's file lock, for the sessions that need it: every
    session on a DuckDB file, the writing ones on a SQLite file, none on a
    database server."""
    if not settings.catalog_is_embedded or (read_only and settings.catalog_is_sqlite):
        return nullcontext()
    return embedded_lock(settings, purpose)


@contextmanager
def embedded_lock(settings: Settings, purpose: str) -> Iterator[None]:
    path = settings.catalog_path
    path.parent.mkdir(parents=True, exist_ok=True)
    holder_file = path.with_name(path.name + ".holder")
    lock = FileLock(str(path) + ".lock")
    with _turn_of_this_thread(os.path.realpath(lock.lock_file)):
        _acquire(lock, holder_file, settings.lock_timeout)
        try:
            holder_file.write_text(json.dumps({"pid": os.getpid(), "purpose": purpose, "since": time.time()}))
            yield
        finally:
            lock.release()


_TURNS: dict[str, threading.Lock] = {}  # one per embedded catalog this process uses
_TURNS_GUARD = threading.Lock()
_HELD_BY_THREAD = threading.local()


@contextmanager
def _turn_of_this_thread(key: str) -> Iterator[None]:
    """Threads of this process wait here for each other, without a time
    limit: their sessions are short, and the file lock's timeout is for
    other processes. A thread that already holds the catalog is refused at
    once, since it would wait for itself forever."""
    held: set[str] = _HELD_BY_THREAD.__dict__.setdefault("keys", set())
    if key in held:
        raise CatalogBusy(f"catalog {key.removesuffix('.lock')} is busy: this thread already holds it "
                          "(a catalog session cannot open inside another)")
    with _TURNS_GUARD:
        turn = _TURNS.setdefault(key, threading.Lock())
    with turn:
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)


def _acquire(lock: FileLock, holder_file: Path, timeout: float) -> None:
    """The lock at once, or else after saying who holds it, within `timeout`."""
    try:
        lock.acquire(timeout=min(0.2, timeout))
        return
    except Timeout:
        pass
    holder = _read_holder(holder_file)
    print(f"waiting for the catalog, held by {holder}", file=sys.stderr)
    try:
        lock.acquire(timeout=max(0.0, timeout - 0.2))
    except Timeout:
        raise CatalogBusy(
            f"catalog {holder_file.with_suffix('')} is busy: held by {holder}; try again when it ends"
        ) from None


def _read_holder(holder_file: Path) -> str:
    try:
        info = json.loads(holder_file.read_text())
        return f"pid {info['pid']} ({info['purpose']})"
    except (OSError, ValueError, KeyError):
        return "another searchlake command"
