"""`searchlake research --questions FILE`: every question of a file as a
research task of its own, a few at a time, with one progress bar for the
batch; the answers are the `batch_answers` view (docs/batch.md)."""

from __future__ import annotations

import os
from pathlib import Path

from flows.cli.common import UserError, err, out, settings


def research_batch(path: Path, concurrency: int, name: str | None, library: Path | None, providers: str | None,
                   max_results: int | None, target: int | None, demand_id: str, budget) -> int:
    """Run the batch; the exit status: 0 when every question has its answer, 1 when one failed."""
    # the bar and one line per problem, not Prefect's log (read when Prefect is imported)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
    from flows.batch import MAX_CONCURRENCY, BatchDefaults, check_defaults, plan_batch
    from flows.research_checks import ResearchRefused
    from schemas.batch import QuestionFileError
    from schemas.request import RequestError
    from tasks.records.batch import read_questions
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise UserError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}, not {concurrency}")
    defaults = BatchDefaults(str(library) if library else None,
                             tuple(providers.split(",")) if providers is not None else None,
                             target, max_results, demand_id, budget)
    try:
        check_defaults(defaults)
        config = settings()  # a usable home, before anything is recorded
        plan = plan_batch(read_questions(path), defaults, name)
    except (QuestionFileError, RequestError, ResearchRefused, ValueError) as exc:
        raise UserError(str(exc)) from None
    for note in plan.notes:
        err.print(f"warning: {note}", markup=False, highlight=False)
    if not plan.requests:
        raise UserError(f"{path.name} holds no question to research")
    return _run(plan, config, concurrency)


def _run(plan, config, concurrency: int) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from flows.batch import run_batch
    from flows.prefect_api import PrefectUnavailable
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=err)
    bar = progress.add_task(f"batch {plan.batch_id}", total=len(plan.requests))

    def heard(outcome) -> None:
        if outcome.message:
            progress.console.print(f"row {outcome.row} ({outcome.task_id}): {outcome.status}: {outcome.message}",
                                   markup=False, highlight=False)
        progress.advance(bar)  # once per question: never more done than the total

    with progress:
        try:
            outcomes = run_batch(plan, config, concurrency, heard)
        except PrefectUnavailable as exc:
            raise UserError(str(exc)) from None
    answered = sum(o.status == "answered" for o in outcomes)
    complete = sum(o.status == "complete" for o in outcomes)
    failed = len(outcomes) - answered - complete
    out.print(f"batch {plan.batch_id}: {len(outcomes)} questions — {complete} answered now, {answered} answered "
              f"before, {failed} failed", markup=False, highlight=False)
    out.print(f"answers:  searchlake sql \"select * from batch_answers where batch_id = '{plan.batch_id}' "
              f"order by row\"", markup=False, highlight=False)
    if failed:
        out.print(f"again:    the same command resumes the {failed} unanswered (answered ones are skipped)",
                  markup=False, highlight=False)
    return 1 if failed else 0
