"""The one family of errors searchlake raises, and the tests that tell a
driver's error for what it is (a full disk, a catalog held for a moment).

Every error searchlake raises on purpose derives from `SearchlakeError`, and
what its class says decides what happens to it everywhere:

- `transient`: waiting and trying again may cure it (a catalog another
  command holds, a server answering 429 or 503, a dropped connection). The
  lake's own waits, the HTTP path's retries, Prefect's task retries and the
  web server's "busy, refreshing" page ask this and nothing else.
- `user_error`: the user's input, configuration or environment is wrong and
  the message says what to change. Never shown with a traceback.
- neither: internal, something broke that neither waiting nor the user can
  mend (an engine's error, an unusable answer); still said in one line.

`exit_code` is the command line's exit status for it. Errors of the drivers
(DuckDB, httpx, SQLite and PostgreSQL through DuckDB) are translated into the
family where the driver is used (tasks/lake/engine_errors.py,
tasks/common/http.py), the driver's own error kept as `__cause__`.
"""

from __future__ import annotations

import errno
from typing import ClassVar

_DISK_FULL_WORDS = ("no space left on device", "disk is full", "not enough space on the disk")
# What a catalog says when another connection holds what it needs for a
# moment: a DuckDB file another process has open, a SQLite file another
# connection is writing (SQLite gives up at once rather than deadlock when a
# reader must become the writer), a PostgreSQL transaction that lost a race.
# Waiting and running the work again helps; nothing was committed.
_LOCK_CONTENTION_WORDS = ("conflicting lock is held", "database is locked", "database table is locked",
                          "could not serialize access", "serialization failure", "deadlock detected")


class SearchlakeError(Exception):
    """The root of every error searchlake raises (see the module's docstring)."""

    transient: ClassVar[bool] = False
    user_error: ClassVar[bool] = False
    exit_code: ClassVar[int] = 2

    @property
    def line(self) -> str:
        """The message as one line. args[0], not str(): str() of a LookupError
        quotes its message."""
        text = str(self.args[0]) if self.args else type(self).__name__
        return " ".join(text.split())


class UserError(SearchlakeError):
    """The user's input, configuration or environment is wrong; the message
    says what to change, in one line."""

    user_error = True


class TransientError(SearchlakeError):
    """Waiting and trying again may cure it."""

    transient = True


class InternalError(SearchlakeError):
    """Neither waiting nor the user can mend it: an engine failed, or an
    answer could not be used."""


class DiskFull(UserError):
    """The disk filled while writing; nothing uncommitted is in the lake."""


class RemoteError(SearchlakeError):
    """A call to a remote service failed. `code` lands as the failed item's error_code:
    timeout, http_4xx/http_5xx (e.g. http_429), blocked, bad_response,
    network, not_configured.

    `reason` is the message without the "METHOD url:" prefix (what a caller
    that names the service itself shows). Whether another try may succeed
    differs by answer (a 503 may pass, a 404 will not), so `transient` is the
    instance's, with the server's `retry_after`."""

    def __init__(self, code: str, message: str, *, http_status: int | None = None,
                 reason: str | None = None, retryable: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.code = code
        self.http_status = http_status
        self.reason = message if reason is None else reason
        self.transient = retryable
        self.retry_after = retry_after


def is_transient(exc: BaseException | None) -> bool:
    """Whether waiting and trying again may cure `exc`."""
    return isinstance(exc, SearchlakeError) and exc.transient


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` (an OSError, or a database driver's error that only
    says so in words) is a full disk."""
    if isinstance(exc, DiskFull):
        return True
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return any(words in str(exc).lower() for words in _DISK_FULL_WORDS)


def is_lock_contention(exc: BaseException) -> bool:
    """Whether `exc` (a database driver's error, known only by its words) is
    another connection holding the catalog for a moment: transient, worth
    waiting for (tasks/lake/engine_errors.py makes it a LockContention)."""
    text = str(exc).lower()
    return any(words in text for words in _LOCK_CONTENTION_WORDS)
