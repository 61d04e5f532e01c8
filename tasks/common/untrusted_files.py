"""Files that others wrote: bundle files dropped by other agents, documents
of a user's library.

A file name is any bytes but "/" and NUL; Python decodes one that is not
UTF-8 with surrogate escapes, which no log line, JSON document or catalog
column can hold. Such a name is shown with its odd bytes as \\xNN.
"""

from __future__ import annotations

import os


def is_utf8_name(name: str) -> bool:
    """False for a name Python decoded with surrogate escapes (not UTF-8 on disk)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_path(name: str) -> str:
    """The name as text that can be stored and printed: bytes that are not
    UTF-8 become \\xNN (a UTF-8 name is returned as it is)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")
