"""Errors shared by the stages: calls out (the HTTP path, the page fetcher,
the search providers), the disk and the catalog's locks."""

from __future__ import annotations

import errno

_DISK_FULL_WORDS = ("no space left on device", "disk is full", "not enough space on the disk")
# What a catalog says when another connection holds what it needs for a
# moment: a DuckDB file another process has open, a SQLite file another
# connection is writing (SQLite gives up at once rather than deadlock when a
# reader must become the writer), a PostgreSQL transaction that lost a race.
# Waiting and running the work again helps; nothing was committed.
_LOCK_CONTENTION_WORDS = ("conflicting lock is held", "database is locked", "database table is locked",
                          "could not serialize access", "serialization failure", "deadlock detected")


class RemoteError(Exception):
    """A call to a remote service failed. `code` lands as the failed item's error_code:
    timeout, http_4xx/http_5xx (e.g. http_429), blocked, bad_response,
    network, not_configured.

    `reason` is the message without the "METHOD url:" prefix (what a caller
    that names the service itself shows); `retryable` and `retry_after` tell
    the HTTP path whether and when another try may succeed."""

    def __init__(self, code: str, message: str, *, http_status: int | None = None,
                 reason: str | None = None, retryable: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.code = code
        self.http_status = http_status
        self.reason = message if reason is None else reason
        self.retryable = retryable
        self.retry_after = retry_after


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` (an OSError, or a database driver's error that only
    says so in words) is a full disk."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return any(words in str(exc).lower() for words in _DISK_FULL_WORDS)


def is_lock_contention(exc: BaseException) -> bool:
    """Whether `exc` (a database driver's error, known only by its words) is
    another connection holding the catalog for a moment: worth a retry."""
    text = str(exc).lower()
    return any(words in text for words in _LOCK_CONTENTION_WORDS)
