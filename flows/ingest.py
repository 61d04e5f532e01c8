"""Ingest flow: land bundle files — given paths, or the waiting files of a
landing folder — then consolidate the tasks that received new bundles. A
landing folder's handled files move to its processed/ or refused/ subfolder
(tasks/lake/landing_folder.py), so a scheduled run never reads a file twice."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from prefect.states import Failed

from flows.artifacts import bundles_landed_event, refusals_artifact
from flows.common import retry_when_busy
from flows.consolidate import consolidate_task
from schemas.errors import UserError
from tasks.lake.catalog import commit_scope, open_catalog
from tasks.common.settings import Settings
from tasks.lake.landing import land_files
from tasks.lake.landing_folder import file_away, prepare_landing_folder, waiting_files


class FilesRefused(UserError, RuntimeError):
    """An ingest refused files: the exception of its Failed state. Its
    message names the count and the first refusal; `summary` is what the run
    did (landed, refused, moved, consolidated)."""

    def __init__(self, message: str, summary: dict):
        super().__init__(message, summary)  # both in args: the exception pickles as Prefect stores it

    @property
    def summary(self) -> dict:
        return self.args[1]

    def __str__(self) -> str:
        return self.args[0]



@task(name="land-bundle-files", retries=3, retry_delay_seconds=[5, 15, 45],
      retry_condition_fn=retry_when_busy, cache_policy=NO_CACHE)
def land_task(paths: list[str], task_id: str | None, replace: bool, within: str | None = None) -> dict:
    with open_catalog(Settings(), "ingest flow") as catalog:
        report = land_files(catalog, paths, task_id=task_id, replace=replace, within=within)
    logger = get_run_logger()
    logger.info("landed %d bundles (%d items), replaced %d, unchanged %d, refused %d",
                len(report.landed), report.items_landed, len(report.replaced),
                len(report.unchanged), len(report.refused))
    for refusal in report.refused:
        logger.warning(refusal.line())
    bundles_landed_event(report.tasks, len(report.landed))
    if report.refused:
        refusals_artifact([{"file": r.source, "reason": r.reason, "field": r.field or "", "message": r.message}
                          for r in report.refused])
    return {"tasks": report.tasks, "landed": len(report.landed), "items": report.items_landed,
            "unchanged": len(report.unchanged), "refused": [r.line() for r in report.refused],
            "refused_paths": [r.source for r in report.refused]}


@task(name="scan-landing-folder", cache_policy=NO_CACHE)
def scan_landing_task(folder: str) -> list[str]:
    logger = get_run_logger()
    if prepare_landing_folder(Path(folder)):
        logger.warning("landing folder %s did not exist; created it: drop bundle files there", folder)
    files = [str(path) for path in waiting_files(Path(folder))]
    logger.info("%d bundle files waiting in %s", len(files), folder)
    return files


@task(name="file-away-handled-files", cache_policy=NO_CACHE)
def file_away_task(folder: str, files: list[str], refused_paths: list[str]) -> dict:
    moved = file_away(Path(folder), [Path(f) for f in files], refused_paths)
    get_run_logger().info("moved %d files to processed/, %d to refused/", moved["processed"], moved["refused"])
    return moved


@flow(name="searchlake-ingest", log_prints=False)
def ingest_flow(paths: list[str] | None = None, landing: str | None = None, task_id: str | None = None,
                replace: bool = False, consolidate: bool = True) -> dict:
    """Land `paths`, or (with `landing`) the files waiting in a landing folder.
    A run that refused files ends Failed — after the good files landed and
    their tasks were consolidated — so that Prefect's notifications and
    automations on failed runs report it; the refusals are its table
    artifact `ingest-refusals` and its `searchlake.ingest.refused` event.
    The Failed state's exception is FilesRefused, whose `summary` is what
    the run did; called directly, the flow raises it."""
    waiting = scan_landing_task(landing) if landing is not None else []
    files = list(paths or []) + waiting
    with commit_scope(flow_run_id=flow_run.get_id()):
        # A landing folder's files are read only from inside it, whatever its links say.
        summary = land_task(files, task_id, replace, landing) if files else {"tasks": [], "landed": 0, "refused": []}
        if waiting:
            summary["moved"] = file_away_task(landing, waiting, summary["refused_paths"])
        if consolidate:
            summary["consolidated"] = [consolidate_task(task) for task in summary["tasks"]]
    if summary["refused"]:
        message = (f"refused {len(summary['refused'])} of {len(files)} files "
                   f"(landed {summary['landed']} bundles): {summary['refused'][0]}")
        # An exception as the state's data: Prefect can raise it (a plain dict it cannot, and says so with a TypeError)
        return Failed(message=message, data=FilesRefused(message, summary))
    return summary


if __name__ == "__main__":
    import sys
    try:
        ingest_flow(sys.argv[1:] or None, landing=None if sys.argv[1:] else "data/landing")
    except FilesRefused as refused:
        sys.exit(f"error: {refused.line}")
