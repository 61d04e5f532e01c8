"""Consolidate flow: read each task's new bundles through its cursor."""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from flows.common import retry_when_busy
from tasks.lake.catalog import commit_scope, open_catalog
from tasks.common.settings import Settings
from tasks.lake.consolidation import consolidate


@task(name="consolidate-task", retries=3, retry_delay_seconds=[5, 15, 45],
      retry_condition_fn=retry_when_busy, cache_policy=NO_CACHE)
def consolidate_task(task_id: str, rebuild: bool = False) -> dict:
    with open_catalog(Settings(), "consolidate flow") as catalog:
        report = consolidate(catalog, task_id, rebuild=rebuild)
    get_run_logger().info(report.line())
    return {"task_id": task_id, "bundles_read": report.bundles_read, "items_read": report.items_read,
            "failed_logged": report.failed_logged, "sources": report.sources_written,
            "new_sources": report.new_sources}


@task(name="list-tasks", cache_policy=NO_CACHE)
def known_tasks() -> list[str]:
    with open_catalog(Settings(), "consolidate flow", read_only=True) as catalog:
        return [row[0] for row in catalog.rows("known_tasks")]


@flow(name="searchlake-consolidate")
def consolidate_flow(task_ids: list[str] | None = None, rebuild: bool = False) -> list[dict]:
    with commit_scope(flow_run_id=flow_run.get_id()):
        return [consolidate_task(task, rebuild) for task in (task_ids or known_tasks())]


if __name__ == "__main__":
    consolidate_flow()
