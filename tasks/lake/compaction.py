"""Compaction: DuckLake's maintenance of the lake's table files.

Small files (one per landing batch, many per task) are merged; snapshots
older than the retention are expired, so time travel reaches back that far;
files no kept snapshot reads are deleted, and so are files a killed writer
left before its commit."""

from __future__ import annotations

from tasks.lake.catalog import TABLES_FOLDER, Catalog


def compact(catalog: Catalog, keep_days: float) -> list[str]:
    before = _data_files(catalog)
    catalog.set_variables(keep_days=keep_days)
    catalog.run("compact_merge")
    expired = len(catalog.rows("compact_expire"))
    deleted = len(catalog.rows("compact_cleanup")) + len(catalog.rows("compact_orphans"))
    after = _data_files(catalog)
    return [f"table files: {after} (were {before}; rows kept in the catalog moved out, small files merged)",
            f"snapshots expired: {expired} (older than {keep_days:g} days); unused files deleted: {deleted}"]


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
