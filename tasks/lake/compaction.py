"""Compaction: DuckLake's maintenance of the lake's table files.

Small files (one per landing batch, many per task) are merged; snapshots
older than the retention are expired, so time travel reaches back that far;
files no kept snapshot reads are deleted, and so are files a killed writer
left before its commit: table files no snapshot knows, and raw, quarantine
and report files no row names. Those are taken only once they are an hour
old, so that no writer's file in flight goes."""

from __future__ import annotations

import time
from datetime import datetime

from tasks.lake.catalog import TABLES_FOLDER, Catalog

STRAY_AGE_SECONDS = 3600
NAMED_FILE_FOLDERS = ("raw/", "quarantine/", "reports/")


# Each step commits before the next: DuckLake merges only files already committed.
MAINTENANCE = (("compact_flush", "rows kept in the catalog moved to table files"),
               ("compact_merge", "small table files merged"),
               ("compact_rewrite", "table files rewritten without their deleted rows"))


def compact(catalog: Catalog, keep_days: float) -> list[str]:
    """Run the maintenance; what it did, in numbers, a line each."""
    before = _data_files(catalog)
    # per step, DuckLake's rows: (schema, table, rows flushed) or (schema, table, files processed, files created)
    done = {step: catalog.transaction(lambda cat, step=step: cat.rows(step), action="compact", detail=detail)
            for step, detail in MAINTENANCE}
    catalog.set_variables(keep_days=keep_days)
    expired = len(catalog.transaction(lambda cat: cat.rows("compact_expire"), action="compact",
                                      detail=f"snapshots older than {keep_days:g} days expired"))
    deleted = len(catalog.rows("compact_cleanup")) + len(catalog.rows("compact_orphans"))
    after = _data_files(catalog)
    stray = stray_files(catalog, min_age_seconds=STRAY_AGE_SECONDS)
    for key in stray:
        catalog.lake.delete(key)
    merged, made = _totals(done["compact_merge"])
    rewritten, _ = _totals(done["compact_rewrite"])
    return [f"rows moved from the catalog to table files: {sum(row[2] for row in done['compact_flush'])}",
            f"small table files merged: {merged} into {made}; rewritten without their deleted rows: {rewritten}",
            f"table files the lake reads: {after} (were {before})",
            f"snapshots expired: {expired} (older than {keep_days:g} days); unused table files deleted: {deleted}",
            f"raw, quarantine and report files no row names, over an hour old, deleted: {len(stray)}"]


def _totals(rows: list[tuple]) -> tuple[int, int]:
    """Files processed and files created, over the tables of a step's rows."""
    return sum(row[2] for row in rows), sum(row[3] for row in rows)


def stray_files(catalog: Catalog, min_age_seconds: float = 0) -> list[str]:
    """Lake keys under raw/, quarantine/ and reports/ that no row names (a
    writer killed between writing a file and committing the row that names
    it leaves one), at least `min_age_seconds` old."""
    named = {row[0] for row in catalog.rows("lake_file_keys")}
    lake = catalog.lake
    stray = []
    for folder in NAMED_FILE_FOLDERS:
        base = f"{lake.root}/{folder}"
        if not lake.fs.exists(base):
            continue
        for path, info in lake.fs.find(base, detail=True).items():
            key = path[len(lake.root) + 1:]
            if key not in named and _age_seconds(info) >= min_age_seconds:
                stray.append(key)
    return sorted(stray)


def _age_seconds(info: dict) -> float:
    """A file's age from fsspec's details: `mtime` (local files) or `LastModified` (object stores)."""
    stamp = info.get("mtime", info.get("LastModified"))
    if isinstance(stamp, datetime):
        stamp = stamp.timestamp()
    return time.time() - float(stamp) if stamp is not None else 0.0


def orphan_table_files(catalog: Catalog) -> list[str]:
    """Files under the tables folder that no snapshot knows: what a writer
    killed before its commit leaves (never read; `compact` deletes them once
    they are an hour old, so that no writer's file in flight is taken)."""
    known = {row[0] for row in catalog.rows("table_file_names")}
    lake = catalog.lake
    folder = f"{lake.root}/{TABLES_FOLDER}"
    on_disk = lake.fs.find(folder) if lake.fs.exists(folder) else []
    return sorted(path for path in on_disk if path.rsplit("/", 1)[-1] not in known)


def _data_files(catalog: Catalog) -> int:
    return catalog.rows("compact_file_count")[0][0]
