"""Plain Parquet copies of the tables a dashboard reads, for readers that do
not speak DuckLake (Polars, pyarrow, Spark, a BI tool's Parquet connector).

The lake's own table folders are not readable that way: DuckLake keeps
small commits inside the catalog, replaced rows stay in their files until
compaction (a plain reader applies no delete files) and some tables have no
Parquet at all. So each published table is also written, per task, as one
Parquet file under `exports/<table>/task_id=<task>/data.parquet` (hive
layout: the task id comes from the folder, not the file), rewritten whole
after every change to the task and swapped in at once — a reader sees the
task's old rows or its new ones, never half of them and never both. A task
with no rows left has no file. The folders are written without following a
link anyone planted in them (tasks/lake/own_folders.py).
"""

from __future__ import annotations

import io
import sys

from tasks.lake.catalog import Catalog
from tasks.lake.own_folders import NotOurFolder
from tasks.lake.sqlfiles import sql

EXPORTS_FOLDER = "exports"
STAGING = f"{EXPORTS_FOLDER}/.staging"  # outside every table's folder: a reader never lists a half-written file
# table -> the SQL surface it is copied from (sql/export_<table>.sql selects one task's rows)
EXPORTED = ("consolidated", "bundles", "runs", "reports", "report_citations", "error_log")


def export_key(table: str, task_id: str) -> str:
    return f"{EXPORTS_FOLDER}/{table}/task_id={task_id}/data.parquet"


def refresh_exports(catalog: Catalog, task_id: str, tables: tuple[str, ...] = EXPORTED, *,
                    strict: bool = False) -> None:
    """Rewrite the task's Parquet copy of each table from what the catalog
    holds now (call after the change committed). A symbolic link planted on
    the way (exports/<table>, exports/.staging, the task's folder) is never
    written or deleted through: that copy is skipped with a warning on stderr
    — the change itself is committed — or, when `strict`, NotOurFolder."""
    for table in tables:
        try:
            _export(catalog, table, task_id)
        except NotOurFolder as refused:
            if strict:
                raise
            print(f"warning: the {table} export of task {task_id} was not written: {refused.line}",
                  file=sys.stderr)


def _export(catalog: Catalog, table: str, task_id: str) -> None:
    rows = catalog.con.execute(sql(f"export_{table}"), [task_id]).to_arrow_table()
    rows = rows.drop_columns(["task_id"])
    if rows.num_rows:
        catalog.lake.replace_own_file(export_key(table, task_id), _parquet(rows), staging=STAGING)
    else:
        catalog.lake.delete_own_file(export_key(table, task_id))


def _parquet(rows) -> bytes:
    # Imported here: pyarrow (with numpy) takes a fifth of a second to import,
    # paid by the commands that write an export, not by every one that
    # imports consolidation (`searchlake report` does, for its errors).
    import pyarrow.parquet as pq
    buffer = io.BytesIO()
    pq.write_table(rows, buffer, compression="zstd")
    return buffer.getvalue()
