"""The only module that opens DuckDB connections.

A catalog session holds an exclusive file lock, so two searchlake commands on
the same lake never interleave their writes: the second waits up to
`SEARCHLAKE_LOCK_TIMEOUT` seconds and then says the catalog is busy.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from filelock import FileLock, Timeout

from schemas import rows
from tasks.common.settings import Settings
from tasks.lake.files import STAGING, Lake, LakeWrite, publish
from tasks.lake.sqlfiles import sql, sql_group

_HELD_HERE: set[str] = set()  # catalogs a thread of this process holds
TEMPLATES = {"results": rows.RESULTS, "consolidated": rows.CONSOLIDATED}


# What a failed catalog statement raises, for callers outside the lake package.
CatalogError = duckdb.Error


class CatalogBusy(RuntimeError):
    """Another searchlake command holds the catalog."""


class Catalog:
    def __init__(self, con: duckdb.DuckDBPyConnection, lake: Lake, settings: Settings):
        self.con = con
        self.lake = lake
        self.settings = settings

    def run(self, name: str, params: list | tuple | None = None) -> duckdb.DuckDBPyConnection:
        """Run the statement kept in sql/<name>.sql."""
        return self.con.execute(sql(name), params or [])

    def rows(self, name: str, params: list | tuple | None = None) -> list[tuple]:
        return self.run(name, params).fetchall()

    def write_parquet(self, name: str, key: str) -> None:
        """Write the result of sql/<name>.sql to the lake file `key`."""
        self.con.sql(sql(name)).write_parquet(self.lake.uri(key))

    def set_variables(self, **values) -> None:
        for name, value in values.items():
            self.con.execute(f"SET VARIABLE {name} = ?", [value])

    def commit_write(self, write: LakeWrite, record: Callable[["Catalog"], None]) -> None:
        """Record catalog rows and publish staged files as one transaction."""
        self.con.begin()
        try:
            record(self)
            self.run("pending_publish_add", [write.txn, write.plan_json])
            self.con.commit()
        except BaseException:
            self.con.rollback()
            raise
        self._publish(write.txn, write.plan_json)
        self.refresh_views()

    def _publish(self, txn: str, plan: str) -> None:
        publish(self.lake, txn, plan)
        self.run("pending_publish_done", [txn])

    def recover(self) -> None:
        """Finish committed publishes and drop uncommitted staging debris."""
        pending = self.rows("pending_publish_all")
        for txn, plan in pending:
            self._publish(txn, plan)
        committed = {txn for txn, _ in pending}
        for txn in self.lake.staging_dirs():
            if txn not in committed:
                self.lake.delete(f"{STAGING}/{txn}")

    def file_uris(self, kind: str) -> list[str]:
        paths = [row[0] for row in self.rows("lake_files_of_kind", [kind])]
        return [self.lake.uri(p) for p in paths] or [self.lake.uri(Lake.template_key(kind))]

    def refresh_views(self) -> None:
        self.set_variables(
            results_files=self.file_uris("results"),
            consolidated_files=self.file_uris("consolidated"),
        )
        for statement in sql_group("views_"):
            self.con.execute(statement)

    def confine_to_lake(self) -> None:
        """From now on the engine opens only the catalog and the lake files
        the views read: no other file, no extension, no setting changed back."""
        self.con.execute("SET allowed_paths = ?", [self.file_uris("results") + self.file_uris("consolidated")])
        self.con.execute(sql("sandbox_confine"))

    def ensure_templates(self) -> None:
        for kind, schema in TEMPLATES.items():
            key = Lake.template_key(kind)
            if not self.lake.exists(key):
                self.lake.prepare_dir(key)
                self.lake.write_parquet(key + ".tmp", schema.empty_table())
                self.lake.move(key + ".tmp", key)


def _acquire(lock: FileLock, holder_file: Path, timeout: float) -> None:
    try:
        lock.acquire(timeout=min(0.2, timeout))
        return
    except Timeout:
        pass
    holder = _read_holder(holder_file)
    if str(holder_file) not in _HELD_HERE:  # threads of one run wait on each other silently
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


@contextmanager
def open_catalog(settings: Settings, purpose: str = "command", *, read_only: bool = False,
                 confined: bool = False) -> Iterator[Catalog]:
    """A locked catalog session. `read_only` sessions cannot change the
    catalog, but first bring it to a consistent state. `confined` (read-only)
    sessions run analysts' SQL: see Catalog.confine_to_lake."""
    path = settings.catalog_path
    path.parent.mkdir(parents=True, exist_ok=True)
    holder_file = path.with_name(path.name + ".holder")
    lock = FileLock(str(path) + ".lock")
    _acquire(lock, holder_file, settings.lock_timeout)
    _HELD_HERE.add(str(holder_file))
    try:
        holder_file.write_text(json.dumps({"pid": os.getpid(), "purpose": purpose, "since": time.time()}))
        lake = Lake(settings.lake_root)
        with _connect(path, lake, settings, read_only=False) as catalog:
            for statement in sql_group("schema_"):
                catalog.con.execute(statement)
            catalog.ensure_templates()
            catalog.recover()
            if not read_only:
                catalog.refresh_views()
                yield catalog
                return
        with _connect(path, lake, settings, read_only=True) as catalog:
            catalog.refresh_views()
            if confined:
                catalog.confine_to_lake()
            yield catalog
    finally:
        _HELD_HERE.discard(str(holder_file))
        lock.release()


@contextmanager
def _connect(path: Path, lake: Lake, settings: Settings, *, read_only: bool) -> Iterator[Catalog]:
    con = duckdb.connect(str(path), read_only=read_only)
    try:
        if not lake.is_local:
            con.register_filesystem(lake.fs)
        yield Catalog(con, lake, settings)
    finally:
        con.close()
