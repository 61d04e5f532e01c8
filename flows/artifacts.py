"""What a flow run shows in Prefect's UI and API besides its logs: the
report a research run wrote (with its citations), its counts, the files an
ingest refused, and events automations can act on (bundles landed, files
refused). Keys name the task, so Prefect keeps each task's
artifacts as one history (Prefect allows lowercase letters, digits and
dashes in a key)."""

from __future__ import annotations

import re

from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.events import emit_event

MAX_KEY = 100


def artifact_key(kind: str, name: str = "") -> str:
    key = re.sub(r"[^a-z0-9]+", "-", f"{kind}-{name}".lower()).strip("-")
    return key[:MAX_KEY].rstrip("-")


def report_artifact(task_id: str, markdown: str) -> None:
    create_markdown_artifact(markdown, key=artifact_key("report", task_id),
                             description=f"searchlake research report of task {task_id}")


def research_counts_artifact(task_id: str, outputs: dict, counts: dict, elapsed_seconds: float) -> None:
    rows = [
        {"measure": "searches", "value": outputs.get("searches", 0)},
        {"measure": "searches resumed (landed before)", "value": outputs.get("resumed", 0)},
        {"measure": "failed searches", "value": outputs.get("failed_searches", 0)},
        {"measure": "candidate sources", "value": counts.get("candidate_count", 0)},
        {"measure": "selected sources", "value": counts.get("filtered_count", 0)},
        {"measure": "publishers", "value": counts.get("publisher_count", 0)},
        {"measure": "fallback rounds", "value": outputs.get("fallback_rounds", 0)},
        {"measure": "elapsed seconds", "value": round(elapsed_seconds, 1)},
    ]
    create_table_artifact(rows, key=artifact_key("research-counts", task_id),
                          description=f"searchlake research run counts of task {task_id}")


LAKE_RESOURCE = {"prefect.resource.id": "searchlake.lake", "prefect.resource.name": "searchlake lake"}


def bundles_landed_event(tasks: list[str], bundles: int) -> None:
    """Said after every landing: a freshness automation expects it
    (automations/no-new-bundles.yaml)."""
    if bundles:
        emit_event("searchlake.bundles.landed", resource=LAKE_RESOURCE,
                   payload={"bundles": bundles, "tasks": tasks})


def refusals_artifact(refused: list[dict]) -> None:
    """The files an ingest refused, one row each (file, reason), and an
    event an automation can act on."""
    create_table_artifact(refused, key=artifact_key("ingest-refusals"),
                          description="bundle files the ingest refused, with the reason")
    emit_event("searchlake.ingest.refused", resource=LAKE_RESOURCE, payload={"refused": len(refused)})
