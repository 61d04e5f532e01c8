"""Everything that watches a research run, fed from one place: the trace
(JSONL + run_events), the progress events (JSONL for `serve`; docs/web.md),
and the terminal when a person is watching."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from flows import observer
from schemas.governance import GateResult
from tasks.common.settings import Settings
from tasks.records.runs import INTERRUPTED, ClosedRun, RunRecord, close_dead_runs
from tasks.records.summary import RunSummary
from tasks.records.trace import TraceLog
from tasks.lake.files import run_logs_root
from tasks.server.events import EventLog, ProgressTracker, end_log, events_path

# (stepType, weight, label) of the progress bar a UI follows
STEPS = [("plan", 0.05, "planning queries"), ("index", 0.05, "indexing the library"),
         ("deep_search", 0.45, "searching in parallel"), ("consolidate", 0.05, "deduplicating and ranking"),
         ("filter", 0.15, "filtering for quality"), ("reporting", 0.25, "writing the report")]
STEP_OF_STAGE = {"plan": "plan", "index": "index", "search": "deep_search", "deeper_search": "deep_search",
                 "fallback_search": "deep_search",
                 "consolidate": "consolidate", "hard_filter": "filter", "coarse_filter": "filter",
                 "quality_filter": "filter", "publishers": "filter", "report": "reporting"}

STEP_OF_GATE = {"search_completeness": "consolidate", "filter_sufficiency": "filter", "output_check": "reporting"}

_LAST_STAGE_OF_STEP = {"plan", "index", "search", "deeper_search", "fallback_search", "consolidate", "publishers", "report"}


class RunView:
    def __init__(self, settings: Settings, task_id: str, trace_id: str):
        self.trace = TraceLog(settings, task_id, trace_id)
        self.events = EventLog.for_run(settings, task_id, trace_id)
        self.progress = ProgressTracker(STEPS, sink=self.events)
        self.terminal = observer.current.get()
        self.searches_total = 0
        self.searches_done = 0

    def begin(self, plan_lines: list[str], record: RunRecord, request: dict | None = None) -> None:
        """The run begins: its `runs` row (`record`) and first trace line in
        one commit, then the progress events and the terminal. `request`:
        what the run was asked with (library, providers, target), so that the
        page can ask the same again."""
        self.trace.run("running", {"plan": plan_lines, "request": request}, record=record)
        self.progress.begin({"plan": plan_lines})
        self.terminal.plan(plan_lines)

    @contextmanager
    def stage(self, name: str, label: str) -> Iterator[dict]:
        step = STEP_OF_STAGE.get(name)
        self.terminal.step(name, label)
        if step and (step not in self.progress.partial or step in self.progress.done):
            self.progress.start(step)
        with self.trace.stage(name, attempt=self.trace.attempts(name) + 1) as detail:
            yield detail
        if step and name in _LAST_STAGE_OF_STEP:
            self.progress.complete(step, metadata=dict(detail))

    def searches_planned(self, total: int) -> None:
        self.searches_total, self.searches_done = total, 0
        self.terminal.searches_planned(total)

    def search_done(self, provider: str, query_id: str, items: int, failed: bool) -> None:
        self.searches_done += 1
        self.progress.advance("deep_search", self.searches_done / max(1, self.searches_total),
                              metadata={"provider": provider, "query_id": query_id, "items": items, "failed": failed,
                                        "done": self.searches_done, "total": self.searches_total})
        self.terminal.search_done(provider, query_id, items, failed)

    def gate(self, result: GateResult) -> None:
        self.trace.gate(result)
        self.progress.note(STEP_OF_GATE.get(result.gate, "filter"),
                           {"gate": result.gate, "outcome": result.outcome, "reason": result.reason})
        if result.outcome != "pass":
            self.terminal.note(f"gate {result.gate}: {result.outcome} — {result.reason}")

    def finish(self, result: dict, record: RunRecord, summary: RunSummary) -> None:
        """The run ends: its closed `runs` row (`record`) and last trace lines
        in one commit before the progress events end, so that whoever
        follows the events reads the final row; the last event carries the
        row's `summary`, for a follower that does not open the lake."""
        self.trace.run("complete", result, record=record)
        self.trace.flush()  # lines that waited for a busy catalog: the run has no next line to take them
        self.progress.finish(result, metadata={"summary": summary.as_event()})
        self.events.close()

    def fail(self, status: str, error: str, record: RunRecord) -> None:
        self.trace.run(status, {"error": error}, record=record)
        self.trace.flush()
        self.progress.fail(error)
        self.events.close()


def end_dead_runs(settings: Settings) -> list[ClosedRun]:
    """Close the runs whose process died (tasks.records.runs.close_dead_runs)
    and end what watches them: the trace gets its last line (and sends the
    rows it lacked), the progress events their final event (the error of an
    interrupted run), so that a page following the run stops."""
    closed = close_dead_runs(settings)
    for run in closed:
        interrupted = run.status == INTERRUPTED
        TraceLog(settings, run.task_id, run.trace_id).run(run.status, {"error" if interrupted else "note": run.message})
        end_log(events_path(run_logs_root(settings), run.task_id, run.trace_id), run.message if interrupted else None)
    return closed

