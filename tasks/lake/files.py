"""The lake's files besides its tables, behind one fsspec filesystem.

The tables' rows are DuckLake's Parquet files under `tables/`. Next to them
live files the catalog rows point at: each bundle's raw JSON, quarantined
input, reports and per-run artifacts. Such a file is written whole (to a
temporary name, then renamed; an object store's put is atomic) before the
transaction that references it commits, at a key that either names its
content (raw bundles, quarantine) or belongs to the writer alone (a run's
files) or is replaced as a whole (a task's report). A file a transaction
replaces is deleted only after the commit.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from tasks.common.settings import Settings
from tasks.common.untrusted_files import FileRefused, read_file_inside
from tasks.lake import own_folders


class Lake:
    def __init__(self, root: str):
        if "://" in root or "::" in root:
            import fsspec
            from fsspec.implementations.local import LocalFileSystem
            self._fs, path = fsspec.core.url_to_fs(root)
            self.is_local = isinstance(self._fs, LocalFileSystem)
            self.root = os.path.abspath(path) if self.is_local else path.rstrip("/")
            self.protocol = None if self.is_local else _first_protocol(self._fs)
        else:  # a folder: fsspec is loaded when a file is first touched, not by a command that reads only tables
            self._fs = None
            self.is_local, self.root, self.protocol = True, os.path.abspath(os.path.expanduser(root)), None

    @property
    def fs(self):
        if self._fs is None:
            from fsspec.implementations.local import LocalFileSystem
            self._fs = LocalFileSystem()
        return self._fs

    # -- layout ---------------------------------------------------------
    @staticmethod
    def raw_key(task_id: str, query_id: str, content_hash: str) -> str:
        return f"raw/task_id={task_id}/query_id={query_id}/{content_hash}.json"

    @staticmethod
    def quarantine_key(sha256: str, suffix: str) -> str:
        return f"quarantine/{date.today().isoformat()}/{sha256}{suffix}"

    @staticmethod
    def report_key(task_id: str, report_id: str, name: str) -> str:
        """report.md, report.json, report.html of a task's report (each
        published report has its folder; the `reports` row names the current one)."""
        return f"reports/task_id={task_id}/report_id={report_id}/{name}"

    @staticmethod
    def run_key(task_id: str, run_id: str, name: str) -> str:
        """Per-run artifacts: plan.json, llm answers, events.jsonl."""
        return f"runs/task_id={task_id}/run_id={run_id}/{name}"

    # -- paths ----------------------------------------------------------
    def uri(self, key: str) -> str:
        full = f"{self.root}/{key}"
        return full if self.is_local else f"{self.protocol}://{full}"

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}"

    def exists(self, key: str) -> bool:
        return self.fs.exists(self._path(key))

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write the file whole: readers see the old content or the new, never a part.
        On a folder the new content is written aside and renamed over the old."""
        path = self._path(key)
        self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        if not self.is_local:  # an object store's put is atomic
            with self.fs.open(path, "wb") as handle:
                handle.write(data)
            return
        partial = f"{path}.{uuid.uuid4().hex}.part"
        try:
            with open(partial, "wb") as handle:
                handle.write(data)
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.remove(partial)

    def replace_own_file(self, key: str, data: bytes, staging: str) -> None:
        """write_bytes() into folders readers list and others may write in
        (exports/): on a folder the new content is written under the key
        `staging` and renamed into place, following no link on the way
        (tasks/lake/own_folders.py); NotOurFolder when a link is in the way."""
        if self.is_local:
            own_folders.replace_file(self.root, key, data, staging)
        else:  # an object store has no links
            self.write_bytes(key, data)

    def delete_own_file(self, key: str) -> None:
        """delete() of a file replace_own_file() wrote, following no link."""
        if self.is_local:
            own_folders.remove_file(self.root, key)
        else:
            self.delete(key)

    def read_bytes(self, key: str, max_bytes: int | None = None) -> bytes:
        """The file at `key`, a key a catalog row names (anyone who can write
        the catalog can name any path). On a folder it is read without leaving
        the lake's folder: FileRefused for a link out of it, a FIFO or a
        device, or a key that is no path below it (`..`, a NUL, not a
        string; tasks/common/untrusted_files.py), and FileTooLarge for one
        over `max_bytes`, judged before it is read."""
        if self.is_local:
            return read_file_inside(self.root, key, max_bytes=max_bytes)
        with self.fs.open(self._path(key), "rb") as handle:
            return handle.read()

    def delete(self, key: str) -> None:
        path = self._path(key)
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)


def run_logs_root(settings: Settings) -> Path:
    """Where the per-run JSONL logs (trace, progress events) live: in the lake
    when it is a local folder, else under the home (object stores cannot append)."""
    lake = Lake(settings.lake_root)
    return Path(lake.root) if lake.is_local else Path(settings.home) / "events"


def published_report_file(settings: Settings, task_id: str, uri: object, name: str = "report.json") -> Path | None:
    """The file at `uri` — where a run's outputs say it published a report —
    when it is the report file `name` of `task_id` in this lake's folder, by
    the lake's layout (reports/task_id=…/report_id=…/name) and a file, not a
    link; None for anything else: another folder, an object store, a path
    that is not a string, a link planted in its place."""
    lake = Lake(settings.lake_root)
    if not lake.is_local or not isinstance(uri, str):
        return None
    path = Path(os.path.normpath(uri))
    folder = Path(lake.root, Lake.report_key(task_id, "x", name)).parent.parent
    report_id = path.parent.name.removeprefix("report_id=")
    if path.name != name or path.parent.parent != folder or report_id == path.parent.name or not report_id.isalnum():
        return None
    return path if path.is_file() and not path.is_symlink() else None  # the lake writes files, never links


def read_published_report(settings: Settings, task_id: str, uri: object, name: str = "report.json") -> bytes | None:
    """The bytes of published_report_file(), read without following a link
    put in its place since it was checked; None when it is not that file or
    cannot be read."""
    path = published_report_file(settings, task_id, uri, name)
    if path is None:
        return None
    lake = Lake(settings.lake_root)
    try:
        return lake.read_bytes(os.path.relpath(path, lake.root))
    except (OSError, FileRefused):
        return None


def end_torn_line(path: Path) -> None:
    """A run log whose writer died in the middle of a line gets that line
    ended, so that the next line appended starts on a line of its own."""
    try:
        with open(path, "rb+") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
    except FileNotFoundError:
        pass


def _first_protocol(fs) -> str:
    protocol = fs.protocol
    return protocol[0] if isinstance(protocol, (tuple, list)) else protocol


@dataclass
class LakeWrite:
    """The files of one transaction: written whole at once, while files it
    replaces are deleted only after the commit."""

    lake: Lake
    deletes: list[str] = field(default_factory=list)

    def put(self, key: str, data: bytes) -> None:
        self.lake.write_bytes(key, data)

    def delete_after_commit(self, key: str) -> None:
        self.deletes.append(key)

    def delete_replaced(self) -> None:
        for key in self.deletes:
            self.lake.delete(key)
