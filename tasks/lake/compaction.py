"""Compaction: DuckLake's maintenance of the lake's table files.

Small files (one per landing batch, many per task) are merged; snapshots
older than the retention are expired, so time travel reaches back that far;
files no kept snapshot reads are deleted."""

from __future__ import annotations

from tasks.lake.catalog import Catalog


def compact(catalog: Catalog, keep_days: float) -> list[str]:
    before = _data_files(catalog)
    catalog.set_variables(keep_days=keep_days)
    catalog.run("compact_merge")
    expired = len(catalog.rows("compact_expire"))
    deleted = len(catalog.rows("compact_cleanup"))
    after = _data_files(catalog)
    return [f"table files: {before} before, {after} now (small files merged)",
            f"snapshots expired: {expired} (older than {keep_days:g} days); unused files deleted: {deleted}"]


def _data_files(catalog: Catalog) -> int:
    return catalog.rows("compact_file_count")[0][0]
