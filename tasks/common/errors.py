"""Errors shared by everything that calls out: the HTTP path, the page
fetcher and the search providers."""

from __future__ import annotations


class RemoteError(Exception):
    """A call to a remote service failed. `code` lands as the failed item's error_code:
    timeout, http_4xx/http_5xx (e.g. http_429), blocked, bad_response,
    network, not_configured."""

    def __init__(self, code: str, message: str, *, http_status: int | None = None):
        super().__init__(message)
        self.code = code
        self.http_status = http_status
