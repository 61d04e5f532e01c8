"""Writing into the lake's folders without following a link someone planted.

The lake's root is configured and trusted, but the folders below it are
open to whoever can write there: a symbolic link put at `exports/<table>`,
`exports/.staging` or a task's folder would have a plain write (makedirs,
open, rename, delete) land in, or remove, a file anywhere the process may
write. So these functions walk down from the root one name at a time,
opening each folder with O_NOFOLLOW (creating it when missing), and create,
rename and delete only by name inside the folder they opened. A link or a
file where a folder should be refuses the write (NotOurFolder): nothing is
written or deleted through it. The last name is never followed either: a
rename replaces a link put there, it does not write through it.
"""

from __future__ import annotations

import errno
import os
import uuid
from contextlib import suppress

from schemas.errors import UserError

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class NotOurFolder(UserError):
    """A name on the way to a file searchlake writes is a link, or not a folder."""


def replace_file(root: str, key: str, data: bytes, staging: str) -> None:
    """Write `data` whole at `key` below `root`: into a new file in the
    folder `staging`, then renamed over the old one, so a reader sees the old
    content or the new, never a part."""
    folders, name = _split(key)
    target = _open_folders(root, folders, create=True)
    try:
        stage = _open_folders(root, _names(staging), create=True)
        try:
            _write_and_rename(stage, target, name, data)
        finally:
            os.close(stage)
    finally:
        os.close(target)  # type: ignore[arg-type]


def remove_file(root: str, key: str) -> None:
    """Delete the file at `key` below `root`, if there is one."""
    folders, name = _split(key)
    folder = _open_folders(root, folders, create=False)
    if folder is None:
        return
    try:
        os.unlink(name, dir_fd=folder)  # a link there is removed itself, never what it points at
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise NotOurFolder(f"{key} in the lake is a folder, not a file searchlake wrote: remove it") from None
    finally:
        os.close(folder)


def _write_and_rename(stage: int, target: int, name: str, data: bytes) -> None:
    partial = f"{uuid.uuid4().hex}.part"
    descriptor = os.open(partial, _NEW_FILE_FLAGS, 0o644, dir_fd=stage)
    try:
        with open(descriptor, "wb", closefd=True) as handle:
            handle.write(data)
        os.replace(partial, name, src_dir_fd=stage, dst_dir_fd=target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(partial, dir_fd=stage)
        raise


def _split(key: str) -> tuple[list[str], str]:
    """The folders of a key and its file's name."""
    names = _names(key)
    return names[:-1], names[-1]


def _names(key: str) -> list[str]:
    names = key.split("/")
    if any(name in ("", ".", "..") for name in names):
        raise ValueError(f"not a key below the lake's root: {key!r}")
    return names


def _open_folders(root: str, names: list[str], *, create: bool) -> int | None:
    """The last of `names` below `root`, opened name by name without
    following a link (made when missing and `create`); None when one is
    missing and not `create`."""
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, name in enumerate(names):
            inner = _open_folder(folder, name, create)
            if inner is None:
                os.close(folder)
                return None
            os.close(folder)
            folder = inner
    except NotOurFolder as refused:
        os.close(folder)
        where = "/".join(names[:depth + 1])
        raise NotOurFolder(f"{where} in the lake {refused.args[0]}: searchlake writes only into folders of "
                           f"its own and follows no link; remove it (nothing was written through it)") from None
    except BaseException:
        os.close(folder)
        raise
    return folder


def _open_folder(parent: int, name: str, create: bool) -> int | None:
    try:
        return _open_no_link(parent, name)
    except FileNotFoundError:
        if not create:
            return None
    with suppress(FileExistsError):  # another writer may make it meanwhile
        os.mkdir(name, dir_fd=parent)
    return _open_no_link(parent, name)  # what is there now, checked again


def _open_no_link(parent: int, name: str) -> int:
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=parent)
    except OSError as error:
        # O_NOFOLLOW|O_DIRECTORY: a link is ELOOP or ENOTDIR, and so is a file
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotOurFolder("is a symbolic link or a file, not a folder") from None
        raise
