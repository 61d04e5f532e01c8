"""DuckDB's errors (and those of the SQLite and PostgreSQL catalogs behind
it) translated into searchlake's family (tasks/common/errors.py), the
engine's own error kept as `__cause__`.

A statement another connection blocks for a moment, or a commit that
conflicts with another writer's, is a `CatalogContended` (transient): the
lake waits and runs the work again (tasks/lake/retries.py). What is left
after those waits is `CatalogBusy`, still transient for whoever schedules
the work (Prefect's task retries, the web page's refresh). Any other failed
statement is a `CatalogError` (internal)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from schemas.errors import (DiskFull, InternalError, TransientError, UserError, is_disk_full,
                                 is_lock_contention)
from tasks.common.settings import Settings

# Free bytes under which a SQLite catalog's I/O error is taken for a full disk.
LOW_ROOM = 1 << 20


class CatalogError(InternalError):
    """A statement the catalog could not run; the engine's error is the cause."""

    @property
    def line(self) -> str:
        return str(self).splitlines()[0] if str(self) else type(self).__name__

    def with_cause(self, cause: BaseException) -> "CatalogError":
        self.__cause__ = cause
        return self


class CatalogContended(TransientError, CatalogError):
    """Another connection or writer stood in the way for a moment."""


class LockContention(CatalogContended):
    """Another connection holds the catalog (a DuckDB file another program
    has open, a SQLite writer, a PostgreSQL transaction that lost a race)."""


class CommitConflict(CatalogContended):
    """The commit conflicts with another writer's (DuckLake does not retry these)."""


class AttachRace(CatalogContended):
    """Processes meeting a fresh shared catalog raced to create DuckLake's own tables in it."""


class CatalogBusy(TransientError):
    """Another command or program held the catalog past the lock timeout."""


class CatalogUnavailable(UserError):
    """The catalog cannot be opened: its database server is unreachable, say."""


def engine_error(exc: duckdb.Error) -> CatalogError:
    """The family member a DuckDB error is (not raised; its cause not set)."""
    if is_lock_contention(exc):
        return LockContention(str(exc))
    if isinstance(exc, duckdb.TransactionException) and "conflict" in str(exc).lower():
        return CommitConflict(str(exc))
    return CatalogError(str(exc))


@contextmanager
def engine_errors() -> Iterator[None]:
    """DuckDB's errors raised inside come out translated (engine_error)."""
    try:
        yield
    except duckdb.Error as exc:
        raise engine_error(exc) from exc


def busy(settings: Settings, exc: BaseException) -> CatalogBusy:
    return CatalogBusy(f"catalog {settings.catalog_shown} is busy: {holder_of(exc)}; try again when it ends")


_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>\S+) \(PID (?P<pid>\d+)\)")


def holder_of(exc: BaseException) -> str:
    """Who holds the catalog, as far as the engine's words tell."""
    text = str(exc)
    if found := _LOCK_HOLDER.search(text):
        return f"another program has it open (pid {found['pid']}, {Path(found['program']).name})"
    if is_lock_contention(exc):
        return "another connection has it locked"
    return "other writers keep changing the same rows"


@contextmanager
def said_plainly(settings: Settings) -> Iterator[None]:
    """What escapes a catalog session, in the family: a catalog still held
    by another connection after the waits is busy; a full disk (a SQLite
    catalog that found no room for its log files says only "disk I/O
    error") is DiskFull; any other engine error a CatalogError."""
    try:
        yield
    except (duckdb.Error, CatalogError, OSError) as exc:
        if isinstance(exc, duckdb.Error):
            exc = engine_error(exc).with_cause(exc)
        if isinstance(exc, CatalogContended):
            raise busy(settings, exc) from exc.__cause__ or exc
        if is_disk_full(exc) or (isinstance(exc, CatalogError) and _sqlite_out_of_room(settings, exc)):
            raise disk_full(exc, settings) from exc.__cause__ or exc
        raise exc


def disk_full(exc: BaseException, settings: Settings) -> DiskFull:
    if isinstance(exc, OSError) and exc.filename:
        where = f"writing {exc.filename}"
    elif not is_disk_full(exc):  # SQLite's "disk I/O error" for want of room
        where = f"writing {settings.catalog_path}"
    else:
        where = " ".join(str(exc).split())[:200]
    return DiskFull(f"the disk is full ({where}); nothing this command had not committed is in the lake: "
                    "free some space and run it again")


def _sqlite_out_of_room(settings: Settings, exc: BaseException) -> bool:
    """SQLite says only "disk I/O error" when it cannot grow its shared-memory
    file (it says "database or disk is full" when a write finds no room)."""
    return settings.catalog_is_sqlite and "disk i/o error" in str(exc).lower() and shutil.disk_usage(settings.catalog_path.parent).free < LOW_ROOM


__all__ = ["AttachRace", "CatalogBusy", "CatalogContended", "CatalogError", "CatalogUnavailable", "CommitConflict",
           "LockContention", "busy", "disk_full", "engine_error", "engine_errors", "holder_of", "said_plainly"]
