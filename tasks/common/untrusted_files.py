"""Files that others wrote: bundle files dropped by other agents, documents
of a user's library.

Whoever writes into a folder we read can plant a symbolic link to
/proc/self/environ (the process's API keys) or /etc/passwd, a FIFO that
blocks a read forever, or swap a file for either after we listed it. So
read_file_inside() decides when it opens: it opens the file once, walking
down from the folder one name at a time without following a link
(O_NOFOLLOW) and without waiting on a FIFO or device (O_NONBLOCK), requires
the opened descriptor to be a regular file (fstat), and reads only that
descriptor. A link is read as its target only when the target lies inside
the folder, by the same walk along the target's own path.

A file over a size limit is refused by the size fstat gives for the opened
descriptor, before anything is read; a caller that records refused files
may ask for its head (the first bytes), its size and the SHA-256 of the
whole of it, read in small pieces so that memory stays bounded.

A file name is any bytes but "/" and NUL; Python decodes one that is not
UTF-8 with surrogate escapes, which no log line, JSON document or catalog
column can hold. Such a name is shown with its odd bytes as \\xNN.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from schemas.errors import SearchlakeError, UserError

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
_HASH_PIECE = 1 << 20  # a file too large to read whole is hashed this much at a time


class FileRefused(UserError):
    """The file was not read; the message says why, in one line."""


@dataclass(frozen=True)
class FileHead:
    """What is kept of a file too large to read: its first bytes, its size,
    and the SHA-256 of all of it."""

    head: bytes
    size: int
    sha256: str


class FileTooLarge(FileRefused):
    """The file is larger than the limit; `head` is what was kept of it
    (None unless the caller asked for it)."""

    def __init__(self, size: int, limit: int, head: FileHead | None = None):
        super().__init__(f"too large ({size:,} bytes; limit {limit:,})")
        self.size, self.limit, self.head = size, limit, head


class _LinkOnTheWay(SearchlakeError):
    """A name on the way to the file is a symbolic link (or not a folder)."""


def read_file_inside(folder: str | os.PathLike, relative: str | os.PathLike, *,
                     max_bytes: int | None = None, keep_head: int = 0) -> bytes:
    """The bytes of the regular file `relative` below `folder`, read without
    leaving the folder. FileRefused for a link leading out of it or a file
    that is not regular; FileTooLarge for one larger than `max_bytes` (with
    its first `keep_head` bytes, size and hash when `keep_head` is given);
    OSError when it cannot be opened or read."""
    root = os.path.realpath(folder)
    names = _names(relative)
    try:
        return _read_without_links(root, names, max_bytes, keep_head)
    except _LinkOnTheWay:
        pass
    target = os.path.realpath(os.path.join(root, *names))
    if not _inside(target, root):
        raise FileRefused("a link to a file outside the folder")
    try:  # realpath resolved every link: one met now was put there since
        return _read_without_links(root, _names(os.path.relpath(target, root)), max_bytes, keep_head)
    except _LinkOnTheWay:
        raise FileRefused("changed while it was read (a link or a file on its way)") from None


def _names(relative: str | os.PathLike) -> list[str]:
    # a relative path may come from a catalog row anyone could write: None, bytes, a NUL
    relative = os.fspath(relative) if isinstance(relative, (str, os.PathLike)) else None
    is_text = isinstance(relative, str) and "\0" not in relative
    names = [name for name in relative.split(os.sep) if name not in ("", ".")] if is_text else []
    if not names or ".." in names or os.path.isabs(relative):
        raise FileRefused("not a path below the folder")
    return names


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _read_without_links(root: str, names: Sequence[str], max_bytes: int | None, keep_head: int) -> bytes:
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in names[:-1]:
            inner = _open_at(name, _FOLDER_FLAGS, folder)
            os.close(folder)
            folder = inner
        descriptor = _open_at(names[-1], _FILE_FLAGS, folder)
    finally:
        os.close(folder)
    try:
        size = _regular_file_size(descriptor)
    except BaseException:
        os.close(descriptor)
        raise
    with open(descriptor, "rb", closefd=True) as handle:
        try:
            return _read_up_to(handle, size, max_bytes)
        except FileTooLarge as refused:
            if keep_head:
                raise FileTooLarge(refused.size, refused.limit, _head_of(handle, keep_head)) from None
            raise


def _open_at(name: str, flags: int, folder: int) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as error:
        # O_NOFOLLOW: a link as the last name is ELOOP, and ENOTDIR when a
        # folder was asked for (a file there is ENOTDIR too: the retry says so).
        if error.errno == errno.ELOOP or (error.errno == errno.ENOTDIR and flags & os.O_DIRECTORY):
            raise _LinkOnTheWay from None
        if error.errno == errno.ENXIO:  # what opening a Unix socket gives
            raise FileRefused("not a regular file (a socket)") from None
        raise


def _regular_file_size(descriptor: int) -> int:
    """The size of what was opened, which must be a regular file."""
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "a special file")
        raise FileRefused(f"not a regular file ({kind})")
    return info.st_size


def _read_up_to(handle, size: int, max_bytes: int | None) -> bytes:
    if max_bytes is None:
        return handle.read()
    if size > max_bytes:  # decided by the opened file's size, before reading any of it
        raise FileTooLarge(size, max_bytes)
    data = handle.read(max_bytes + 1)  # it may have grown since fstat
    if len(data) > max_bytes:
        raise FileTooLarge(os.fstat(handle.fileno()).st_size, max_bytes)
    return data


def _head_of(handle, keep: int) -> FileHead:
    """The first `keep` bytes of the open file, its size and the SHA-256 of
    its bytes up to the size fstat gives now (a file still growing is not
    followed), read a piece at a time."""
    size = os.fstat(handle.fileno()).st_size
    handle.seek(0)
    head = handle.read(min(keep, size))
    digest, read = hashlib.sha256(head), len(head)
    while read < size and (piece := handle.read(min(_HASH_PIECE, size - read))):
        digest.update(piece)
        read += len(piece)
    return FileHead(head, read, digest.hexdigest())


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
