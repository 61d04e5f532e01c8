"""Ingest flow: land bundle files (a landing folder, typically), then
consolidate the tasks that received new bundles."""

from __future__ import annotations

from flows import common  # noqa: F401  (sets Prefect defaults before import)
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import retry_when_busy
from flows.consolidate import consolidate_task
from tasks.lake.catalog import open_catalog
from tasks.common.settings import Settings
from tasks.lake.landing import land_files


@task(name="land-bundle-files", retries=3, retry_delay_seconds=[5, 15, 45],
      retry_condition_fn=retry_when_busy, cache_policy=NO_CACHE)
def land_task(paths: list[str], task_id: str | None, replace: bool) -> dict:
    with open_catalog(Settings(), "ingest flow") as catalog:
        report = land_files(catalog, paths, task_id=task_id, replace=replace)
    logger = get_run_logger()
    logger.info("landed %d bundles (%d items), replaced %d, unchanged %d, refused %d",
                len(report.landed), report.items_landed, len(report.replaced),
                len(report.unchanged), len(report.refused))
    for refusal in report.refused:
        logger.warning(refusal.line())
    return {"tasks": report.tasks, "landed": len(report.landed), "items": report.items_landed,
            "unchanged": len(report.unchanged), "refused": [r.line() for r in report.refused]}


@flow(name="searchlake-ingest", log_prints=False)
def ingest_flow(paths: list[str], task_id: str | None = None, replace: bool = False,
                consolidate: bool = True) -> dict:
    summary = land_task(paths, task_id, replace)
    if consolidate:
        summary["consolidated"] = [consolidate_task(task) for task in summary["tasks"]]
    return summary


if __name__ == "__main__":
    import sys
    ingest_flow(sys.argv[1:] or ["data/landing"])
