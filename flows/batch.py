"""Research a list of questions as one job: each question is a research run
of its own task (the research flow, unchanged), a few at a time.

Each question's task id is derived from the batch and its row
(schemas/batch.py), so running the same batch again skips the questions
that have a report and resumes the others where they stopped: a resumed run
searches only the queries that have not landed (flows/research.py, _search).
The batch's questions are recorded in the lake (`batch_questions`) before
any runs, and `batch_answers` is the table of answers an analyst joins."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow

from flows.research_checks import ResearchRefused, check_request
from schemas.batch import (QuestionFile, QuestionFileError, QuestionRow, batch_id_of, check_batch_name,
                           question_task_id)
from schemas.request import BudgetRequest, RequestError, ResearchRequest
from tasks.common.settings import Settings
from tasks.records.batch import answered_tasks, read_questions, record_batch, rows_of_records

MAX_CONCURRENCY = 8  # research runs at once in one process: each holds a thread pool of its own


@dataclass(frozen=True)
class BatchDefaults:
    """What a row that does not say gets: the command's options."""

    library: str | None = None
    providers: tuple[str, ...] | None = None
    target: int | None = None
    max_results: int | None = None
    demand_id: str = "default"
    budget: BudgetRequest = BudgetRequest()


@dataclass
class BatchPlan:
    batch_id: str
    requests: list[tuple[QuestionRow, ResearchRequest]]  # checked, each with its task id
    notes: list[str] = field(default_factory=list)  # rows skipped or merged, one line each


@dataclass(frozen=True)
class Outcome:
    row: int
    task_id: str
    status: str  # answered (before this run) | complete | failed | timed_out | ...
    message: str | None = None


def check_defaults(defaults: BatchDefaults) -> None:
    """The batch's own options are the command's: a bad one stops the batch
    before anything starts (RequestError or ResearchRefused, one line)."""
    check_request(ResearchRequest.build(
        {"target": "--target", "max_results": "--max-results", "demand_id": "--demand-id"},
        question="(the batch's options)", library=defaults.library,
        providers=list(defaults.providers) if defaults.providers else None, target=defaults.target,
        max_results=defaults.max_results, demand_id=defaults.demand_id, budget=defaults.budget))


def plan_batch(questions: QuestionFile, defaults: BatchDefaults, name: str | None = None) -> BatchPlan:
    """Each row as a checked research request under the batch's stable task
    ids; a row that cannot run (a missing library, an unknown provider) is a
    note and the others still run."""
    rows = [_with_defaults(row, defaults) for row in questions.rows]
    batch_id = check_batch_name(name) if name else batch_id_of(rows)
    plan = BatchPlan(batch_id, [], list(questions.notes))
    checked: dict[tuple, ResearchRequest] = {}  # rows asking the same of the machine are checked once
    for row in rows:
        try:
            request = ResearchRequest.build(
                {"target": f"row {row.row}: target", "question": f"row {row.row}: the question"},
                question=row.question, task_id=question_task_id(batch_id, row), library=row.library,
                providers=list(row.providers) if row.providers else None, target=row.target,
                max_results=defaults.max_results, demand_id=defaults.demand_id, budget=defaults.budget)
            key = (row.library, row.providers)
            if key not in checked:
                checked[key] = check_request(request)
            request = request.model_copy(update={part: getattr(checked[key], part)
                                                 for part in ("library", "providers", "budget")})
        except (RequestError, ResearchRefused) as exc:
            plan.notes.append(f"row {row.row}: {exc}; skipped")
            continue
        plan.requests.append((row, request))
    return plan


def _with_defaults(row: QuestionRow, defaults: BatchDefaults) -> QuestionRow:
    return QuestionRow(row.row, row.question, row.library or defaults.library, row.providers or defaults.providers,
                       row.target or defaults.target)


def run_batch(plan: BatchPlan, settings: Settings, concurrency: int,
              on_outcome: Callable[[Outcome], None] = lambda outcome: None) -> list[Outcome]:
    """Record the batch, then research every question that has no report
    yet, `concurrency` at a time; `on_outcome` hears of each question once."""
    from flows.prefect_api import reach_api
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}, not {concurrency}")
    record_batch(settings, plan.batch_id, [(row, request.task_id) for row, request in plan.requests])
    answered = answered_tasks(settings, [request.task_id for _, request in plan.requests])
    outcomes = []
    for row, request in plan.requests:
        if request.task_id in answered:
            outcomes.append(Outcome(row.row, request.task_id, "answered"))
            on_outcome(outcomes[-1])
    pending = [(row, request) for row, request in plan.requests if request.task_id not in answered]
    if pending:
        reach_api()  # Prefect's temporary server is started once, before the runs' threads need it
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="batch")
    try:
        futures = [pool.submit(_research, row, request) for row, request in pending]
        for future in as_completed(futures):
            outcomes.append(future.result())
            on_outcome(outcomes[-1])
    finally:  # interrupted (Ctrl-C): the questions not started stay for the next run of the batch
        pool.shutdown(wait=True, cancel_futures=True)
    return sorted(outcomes, key=lambda outcome: outcome.row)


def _research(row: QuestionRow, request: ResearchRequest) -> Outcome:
    from flows.prefect_api import PrefectUnavailable, run_flow
    from flows.research import timed_flow
    try:
        state = run_flow(timed_flow(request), **request.flow_parameters())
    except PrefectUnavailable as exc:
        return Outcome(row.row, request.task_id, "failed", str(exc))
    except Exception as exc:  # one question's failure is its own; the batch goes on
        return Outcome(row.row, request.task_id, "failed", f"{type(exc).__name__}: {exc}".splitlines()[0])
    if state.is_completed():
        return Outcome(row.row, request.task_id, "complete")
    status = "timed_out" if "timeout" in (state.message or "").lower() else "failed"
    return Outcome(row.row, request.task_id, status, (state.message or "the run failed").splitlines()[0])


@flow(name="searchlake-research-batch")
def research_batch_deployment(questions: str | list, batch: str | None = None, concurrency: int = 1,
                              library: str | None = None, providers: list[str] | None = None,
                              target: int | None = None) -> dict:
    """The `research-batch` deployment: `questions` is a question file's path
    (read on the worker) or the rows themselves (strings, or objects with the
    file's keys); the same path as `searchlake research --questions FILE`."""
    defaults = BatchDefaults(library, tuple(providers) if providers else None, target)
    try:
        check_defaults(defaults)
        rows = read_questions(Path(questions)) if isinstance(questions, str) else rows_of_records(questions)
        plan = plan_batch(rows, defaults, batch)
    except (QuestionFileError, ValueError) as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    outcomes = run_batch(plan, Settings(), concurrency)
    return {"batch_id": plan.batch_id, "notes": plan.notes,
            "outcomes": [{"row": o.row, "task_id": o.task_id, "status": o.status, "message": o.message}
                         for o in outcomes]}
