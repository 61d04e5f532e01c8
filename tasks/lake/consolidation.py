"""Consolidation: read a task's bundles through its cursor, deduplicate by
source_id, rank by score_final, and publish one row per source.

Each run reads the bundles landed after the lake snapshot its cursor stands
at (so a late bundle is read by the next run even when its query_id sorts
before the cursor), merges them into the previous output, and commits the
new output together with the advanced cursor in one DuckLake transaction. A
run killed at any instant commits nothing; the next run starts from the same
state and reaches the same output.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.errors import UserError
from tasks.common.text import counted
from tasks.lake.catalog import Catalog
from tasks.lake.exports import refresh_exports
from tasks.lake.sqlfiles import records


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


class UnknownTask(UserError, LookupError):
    """No bundle of this task has landed."""


def consolidate(catalog: Catalog, task_id: str, *, rebuild: bool = False) -> ConsolidationReport:
    """Read what landed since the cursor and commit the new output with the
    advanced cursor, in one transaction (run again if another writer's
    commit conflicts)."""
    report = catalog.transaction(lambda cat: _consolidate(cat, task_id, rebuild), action="consolidate",
                                 task_id=task_id)
    refresh_exports(catalog, task_id, ("consolidated", "bundles", "error_log"))
    return report


def _consolidate(catalog: Catalog, task_id: str, rebuild: bool) -> ConsolidationReport:
    high_water, bundle_count = catalog.rows("task_landing_state", [task_id])[0]
    if bundle_count == 0:
        raise UnknownTask(f"no bundles have landed for task {task_id!r}")
    cursor = next(iter(records(catalog.run("cursor_get", [task_id]))), None)
    rebuild = rebuild or cursor is None or cursor["needs_rebuild"]
    from_snapshot = 0 if rebuild else cursor["last_snapshot"]
    if not rebuild and high_water <= from_snapshot:
        return ConsolidationReport(task_id, 0, 0, 0, cursor["consumed_count"], 0, cursor["last_query_id"],
                                   cursor["last_source_id"], False)
    previous_sources = 0 if rebuild else cursor["consumed_count"]
    catalog.run("consolidate_token")
    catalog.set_variables(task_id=task_id, from_snapshot=from_snapshot, rebuild=rebuild)
    catalog.run("consolidate_new_items")
    items_read, bundles_read, failed = catalog.rows("new_items_counts")[0]
    last = catalog.rows("consolidate_last_read")
    last_query, last_source = last[0] if last else (None, None)
    if rebuild and cursor:  # the errors an earlier consolidation logged
        catalog.run("task_errors_clear", [task_id])
    if failed:
        catalog.run("consolidate_errors")
    # A task never consolidated has no output and no cursor row yet: those
    # are committed together, so there is nothing to replace.
    if cursor:
        catalog.run("consolidated_old_rows")
    sources = catalog.rows("consolidate_merge")[0][0]
    if cursor:
        catalog.run("consolidated_old_delete")
        catalog.run("cursor_delete", [task_id])
    catalog.run("cursor_put", {"task_id": task_id, "last_query_id": last_query, "last_source_id": last_source,
                               "consumed_count": sources, "last_snapshot": high_water, "output_rows": sources})
    catalog.run("new_items_drop")
    catalog.describe_commit("consolidate", f"{counted(sources, 'source')} ({sources - previous_sources} new) from "
                            f"{counted(bundles_read, 'bundle')}" + (", rebuilt" if rebuild and cursor else ""),
                            task_id=task_id)
    return ConsolidationReport(task_id, bundles_read, items_read, failed, sources,
                               sources - previous_sources, last_query, last_source, rebuild)
