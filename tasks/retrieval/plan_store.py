"""What a research run keeps in the lake besides bundles: its plan and the
planner's raw answer, and which of its queries already landed."""

from __future__ import annotations

from pathlib import Path

from schemas.plan import ResearchPlan
from tasks.common.text import counted
from tasks.lake.catalog import Catalog
from tasks.lake.files import Lake, LakeWrite
from tasks.retrieval.planning import PlanOutcome
from schemas.errors import UserError


class QuestionMismatch(UserError, ValueError):
    """A task id was reused for a different question."""


def stored_plan(catalog: Catalog, task_id: str) -> ResearchPlan | None:
    rows = catalog.rows("plan_latest", [task_id])
    return ResearchPlan.model_validate_json(rows[0][0]) if rows else None


def store_plan(catalog: Catalog, task_id: str, run_id: str, outcome: PlanOutcome) -> str:
    write = LakeWrite(catalog.lake)
    plan_key = Lake.run_key(task_id, run_id, "plan.json")
    write.put(plan_key, outcome.plan.model_dump_json(indent=2).encode())
    if outcome.raw_answer is not None:
        write.put(Lake.run_key(task_id, run_id, "planner_answer.txt"), outcome.raw_answer.encode())
    plan = outcome.plan

    def record(cat: Catalog) -> None:
        cat.run("plan_insert", {"task_id": task_id, "run_id": run_id, "question": plan.question,
                                "planner": plan.planner, "fallback_reason": plan.fallback_reason,
                                "query_count": len(plan.queries), "plan": plan.model_dump_json(),
                                "raw_answer": outcome.raw_answer, "plan_path": plan_key})

    catalog.transaction(record, write, action="plan", task_id=task_id,
                        detail=f"{counted(len(plan.queries), 'query', 'queries')} ({plan.planner})")
    return plan_key


def landed_query_ids(catalog: Catalog, task_id: str) -> set[str]:
    return {row[0] for row in catalog.rows("landed_query_ids", [task_id])}


def log_skipped_files(catalog: Catalog, task_id: str, provider: str, skipped: list[tuple[str, str]]) -> None:
    """Files a provider could not read while preparing (path, reason), in the task's error log."""
    def log(cat: Catalog) -> None:
        for path, reason in skipped:
            cat.run("error_log_add", {"task_id": task_id, "provider": provider,
                                      "url": Path(path).as_uri() if path.startswith("/") else path,
                                      "error_code": "unreadable", "stage": f"{provider}_index", "message": reason})

    catalog.transaction(log, action="error log", task_id=task_id,
                        detail=f"{counted(len(skipped), 'file')} {provider} could not read")


def selected_source_ids(catalog: Catalog, task_id: str) -> list[str] | None:
    """What the task's latest complete run selected; None when no run
    selected anything (then a report covers the consolidated sources)."""
    ids = [row[0] for row in catalog.rows("selection_latest", [task_id])]
    return ids or None
