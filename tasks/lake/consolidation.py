"""Consolidation: read a task's bundles through its cursor, deduplicate by
source_id, rank by score_final, and publish one row per source.

Each run reads the bundles landed since the cursor's high-water mark (so a
late bundle is read by the next run even when its query_id sorts before the
cursor), merges them into the previous output, and commits the new output
file together with the advanced cursor. A run killed at any instant commits
nothing; the next run starts from the same state and reaches the same output.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.lake.catalog import Catalog
from tasks.lake.files import Lake, LakeWrite


@dataclass(frozen=True)
class ConsolidationReport:
    task_id: str
    bundles_read: int
    items_read: int
    failed_logged: int
    sources_written: int
    new_sources: int
    last_query_id: str | None
    last_source_id: str | None
    rebuilt: bool

    @property
    def nothing_new(self) -> bool:
        return self.bundles_read == 0

    def line(self) -> str:
        if self.nothing_new:
            return f"{self.task_id}: nothing new; {self.sources_written} sources"
        return (f"{self.task_id}: read {self.bundles_read} bundles ({self.items_read} items), "
                f"{self.new_sources} new sources, {self.failed_logged} failed logged; "
                f"{self.sources_written} sources")


class UnknownTask(LookupError):
    """No bundle of this task has landed."""


def consolidate(catalog: Catalog, task_id: str, *, rebuild: bool = False) -> ConsolidationReport:
    high_water, bundle_count = catalog.rows("task_landing_state", [task_id])[0]
    if bundle_count == 0:
        raise UnknownTask(f"no bundles have landed for task {task_id!r}")
    cursor = catalog.rows("cursor_get", [task_id])
    rebuild = rebuild or not cursor or cursor[0][4]
    from_seq = 0 if rebuild else cursor[0][3]
    if not rebuild and high_water <= from_seq:
        last_query, last_source, consumed = cursor[0][0], cursor[0][1], cursor[0][2]
        return ConsolidationReport(task_id, 0, 0, 0, consumed, 0, last_query, last_source, False)
    return _consolidate_from(catalog, task_id, from_seq, high_water, rebuild)


def _consolidate_from(catalog: Catalog, task_id: str, from_seq: int, high_water: int,
                      rebuild: bool) -> ConsolidationReport:
    lake = catalog.lake
    output_key = Lake.consolidated_key(task_id)
    prev = [] if rebuild else catalog.rows("lake_file_of_task", ["consolidated", task_id])
    new_files = [lake.uri(row[0]) for row in catalog.rows("task_results_files", [task_id, from_seq])]
    catalog.set_variables(
        task_id=task_id, from_seq=from_seq,
        new_files=new_files or [lake.uri(Lake.template_key("results"))],
        prev_file=lake.uri(prev[0][0]) if prev else lake.uri(Lake.template_key("consolidated")),
    )
    write = LakeWrite(lake)
    catalog.run("consolidate_new_items")
    items_read, bundles_read, failed = catalog.rows("new_items_counts")[0]
    staged = write.staged(output_key)
    catalog.write_parquet("consolidate_merge", staged)
    sources = catalog.rows("parquet_row_count", [lake.uri(staged)])[0][0]
    last = catalog.rows("consolidate_last_read")
    last_query, last_source = last[0] if last else (None, None)
    previous_sources = 0 if rebuild else _previous_sources(catalog, task_id)

    def record(cat: Catalog) -> None:
        if rebuild:
            cat.run("task_errors_clear", [task_id])
        cat.run("consolidate_errors")
        cat.run("lake_file_remove", [output_key])
        cat.run("lake_file_add", [output_key, "consolidated", task_id, sources])
        cat.run("cursor_put", [task_id, last_query, last_source, sources, high_water, sources])

    catalog.commit_write(write, record)
    catalog.run("new_items_drop")
    return ConsolidationReport(task_id, bundles_read, items_read, failed, sources,
                               sources - previous_sources, last_query, last_source, rebuild)


def _previous_sources(catalog: Catalog, task_id: str) -> int:
    cursor = catalog.rows("cursor_get", [task_id])
    return cursor[0][2] if cursor else 0
