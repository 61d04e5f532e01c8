"""The lake's file layout and its atomic writes, behind one fsspec filesystem.

Writers never write a final path directly: files go to `_staging/<txn>/`, the
catalog commits the transaction together with a `pending_publish` row, and
only then are the staged files moved into place (and replaced files deleted).
A crash before the commit leaves only staging debris, which `recover` deletes;
a crash after it leaves a pending row, which `recover` finishes. Readers
therefore only ever see whole, committed files.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from tasks.common.settings import Settings

STAGING = "_staging"


def new_txn_id() -> str:
    return uuid.uuid4().hex


class Lake:
    def __init__(self, root: str):
        self.fs, path = fsspec.core.url_to_fs(root)
        self.is_local = isinstance(self.fs, LocalFileSystem)
        self.root = os.path.abspath(path) if self.is_local else path.rstrip("/")
        self.protocol = None if self.is_local else _first_protocol(self.fs)

    # -- layout ---------------------------------------------------------
    @staticmethod
    def raw_key(task_id: str, query_id: str, content_hash: str) -> str:
        return f"raw/task_id={task_id}/query_id={query_id}/{content_hash}.json"

    @staticmethod
    def results_key(task_id: str, txn: str) -> str:
        return f"results/task_id={task_id}/part-{txn}.parquet"

    @staticmethod
    def consolidated_key(task_id: str) -> str:
        return f"consolidated/task_id={task_id}/consolidated.parquet"

    @staticmethod
    def quarantine_key(sha256: str, suffix: str) -> str:
        return f"quarantine/{date.today().isoformat()}/{sha256}{suffix}"

    @staticmethod
    def report_key(task_id: str, name: str) -> str:
        """report.md, report.json, report.html of a task."""
        return f"reports/task_id={task_id}/{name}"

    @staticmethod
    def run_key(task_id: str, run_id: str, name: str) -> str:
        """Per-run artifacts: plan.json, llm answers, events.jsonl."""
        return f"runs/task_id={task_id}/run_id={run_id}/{name}"

    @staticmethod
    def template_key(kind: str) -> str:
        return f"_schema/{kind}.parquet"

    @staticmethod
    def task_key(kind: str, task_id: str, name: str) -> str:
        return f"{kind}/task_id={task_id}/{name}"

    # -- paths ----------------------------------------------------------
    def uri(self, key: str) -> str:
        full = f"{self.root}/{key}"
        return full if self.is_local else f"{self.protocol}://{full}"

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}"

    def exists(self, key: str) -> bool:
        return self.fs.exists(self._path(key))

    def write_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        with self.fs.open(path, "wb") as handle:
            handle.write(data)

    def read_bytes(self, key: str) -> bytes:
        with self.fs.open(self._path(key), "rb") as handle:
            return handle.read()

    def write_parquet(self, key: str, table: pa.Table, **options) -> None:
        """`options` go to pyarrow.parquet.write_table (row_group_size, ...)."""
        pq.write_table(table, self._path(key), filesystem=None if self.is_local else self.fs, **options)

    def read_parquet(self, key: str) -> pa.Table:
        return pq.read_table(self._path(key), filesystem=None if self.is_local else self.fs)

    def prepare_dir(self, key: str) -> None:
        self.fs.makedirs(self._path(key).rsplit("/", 1)[0], exist_ok=True)

    def delete(self, key: str) -> None:
        path = self._path(key)
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    def move(self, src: str, dst: str) -> None:
        self.prepare_dir(dst)
        if self.is_local:
            os.replace(self._path(src), self._path(dst))
        else:
            self.fs.mv(self._path(src), self._path(dst))

    def staging_dirs(self) -> list[str]:
        base = self._path(STAGING)
        if not self.fs.exists(base):
            return []
        return [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(base, detail=False)]


def run_logs_root(settings: Settings) -> Path:
    """Where the per-run JSONL logs (trace, progress events) live: in the lake
    when it is a local folder, else under the home (object stores cannot append)."""
    lake = Lake(settings.lake_root)
    return Path(lake.root) if lake.is_local else Path(settings.home) / "events"


def _first_protocol(fs) -> str:
    protocol = fs.protocol
    return protocol[0] if isinstance(protocol, (tuple, list)) else protocol


@dataclass
class LakeWrite:
    """Files staged by one transaction, published only after its commit."""

    lake: Lake
    txn: str = field(default_factory=new_txn_id)
    moves: dict[str, str] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)

    def staged(self, final_key: str) -> str:
        """The staging key under which to write `final_key`; its parent exists."""
        key = f"{STAGING}/{self.txn}/{final_key}"
        self.moves[key] = final_key
        self.lake.prepare_dir(key)
        return key

    def stage_bytes(self, final_key: str, data: bytes) -> None:
        self.lake.write_bytes(self.staged(final_key), data)

    def delete_after_commit(self, key: str) -> None:
        self.deletes.append(key)

    @property
    def plan_json(self) -> str:
        return json.dumps({"moves": self.moves, "deletes": self.deletes})


def publish(lake: Lake, txn: str, plan_json: str) -> None:
    """Move staged files into place and drop replaced ones; safe to repeat."""
    plan = json.loads(plan_json)
    for staged, final in plan["moves"].items():
        if lake.exists(staged):
            lake.move(staged, final)
    for key in plan["deletes"]:
        if key not in plan["moves"].values():
            lake.delete(key)
    lake.delete(f"{STAGING}/{txn}")
