"""The record of a governed run (docs/research.md): one `runs` row from start to
finish, every stage and gate event both as a line of the run's trace.jsonl
and as a `run_events` row, and the outcome (`selections`, `drops`,
`publishers`, `publisher_sources`). Tables: sql/schema_60_governance.sql;
views: sql/views_60_governance.sql.

Every function opens its own short catalog session: a run lasts minutes and
must not hold the catalog lock (other commands wait on it) between its
records. Do not call them while holding the catalog yourself.

The run's trace (its trace.jsonl and `run_events` rows) is
tasks/records/trace.py; its lines become rows in the commits of the
records made here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schemas.bundle import check_identifier
from schemas.governance import Budget, Drop, Policy, Publisher, StageRecord
from tasks.common.processes import ProcessIdentity
from tasks.lake.catalog import Catalog, current_flow_run, open_catalog
from tasks.common.settings import Settings
from tasks.common.text import counted
from tasks.lake.exports import refresh_exports
from tasks.lake.files import Lake, LakeWrite
from tasks.selection.filters import Candidate

if TYPE_CHECKING:
    from tasks.records.trace import TraceLog

OUTPUT_FILE = "output.json"
INTERRUPTED = "interrupted"  # its process ended, or was told to stop, before it did (killed, crashed, Ctrl-C)
FINAL_STATUSES = ("complete", "failed", "timed_out", INTERRUPTED)


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# -- the run's own records ---------------------------------------------------------

@dataclass(frozen=True)
class RunRecord:
    """A change of a run's own rows, with what the lake's history says of
    it ("run started"). Committed alone (commit_record) or by the run's
    trace together with the trace lines waiting to be rows (TraceLog.commit)."""

    action: str
    change: Callable[[Catalog], None]
    detail: str = ""
    task_id: str | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)  # lake files it publishes, written before its commit
    trace_id: str | None = None  # the run's, when its task is not at hand


def commit_record(settings: Settings, record: RunRecord, lines: Callable[[Catalog], None] | None = None) -> None:
    """`record` in one commit, with what `lines` adds (trace rows)."""
    with open_catalog(settings, f"governed run: {record.action}") as catalog:
        write = LakeWrite(catalog.lake)
        for key, data in record.files.items():
            write.put(key, data)

        def change(cat: Catalog) -> None:
            record.change(cat)
            if lines is not None:
                lines(cat)

        catalog.transaction(change, write, action=record.action, detail=record.detail, task_id=record.task_id)
        for task_id in [record.task_id] if record.task_id else [r[0] for r in catalog.rows("run_task", [record.trace_id])]:
            refresh_exports(catalog, task_id, ("runs",))


def run_started(trace_id: str, task_id: str, question: str, demand_id: str | None, policy_source: str,
                budget: Budget, policy: Policy | None = None, process: ProcessIdentity | None = None,
                lease_seconds: float | None = None) -> RunRecord:
    """The `runs` row of a run that begins (status 'running'), with the
    process that runs it (this one unless told) and its lease: how long it
    may go without a heartbeat (tasks/records/heartbeat.py) before
    readers take it for interrupted (None: only its closing row ends it).
    Committing it again for the same trace changes nothing."""
    process = process or ProcessIdentity.current()
    params = {"trace_id": trace_id, "task_id": task_id, "question": question, "demand_id": demand_id,
              "policy_source": policy_source, "budget": as_json(budget.to_dict()),
              "policy": as_json(policy.to_dict()) if policy else None, "host": process.host, "pid": process.pid,
              "process_started": process.started, "flow_run_id": current_flow_run(),
              "lease_seconds": lease_seconds}
    return RunRecord("run started", lambda cat: cat.run("run_start", params), task_id=task_id)


def start_run(settings: Settings, trace_id: str, task_id: str, question: str, demand_id: str | None,
              policy_source: str, budget: Budget, policy: Policy | None = None,
              process: ProcessIdentity | None = None, lease_seconds: float | None = None) -> None:
    commit_record(settings, run_started(trace_id, task_id, question, demand_id, policy_source, budget, policy,
                                        process, lease_seconds))


def run_finished(trace_id: str, status: str, *, candidate_count: int = 0, filtered_count: int = 0,
                 publisher_count: int = 0, elapsed_seconds: float = 0.0,
                 stage_history: Sequence[StageRecord | Mapping] = (), outputs: Mapping[str, Any] | None = None,
                 error: str | None = None) -> RunRecord:
    """The run's row closed with its final status (complete | failed | timed_out | interrupted)."""
    if status not in FINAL_STATUSES:
        raise ValueError(f"run status {status!r} is not one of {', '.join(FINAL_STATUSES)}")
    history = [s.to_dict() if isinstance(s, StageRecord) else dict(s) for s in stage_history]
    params = {"status": status, "candidate_count": candidate_count, "filtered_count": filtered_count,
              "publisher_count": publisher_count, "elapsed_seconds": round(float(elapsed_seconds), 3),
              "stage_history": as_json(history), "outputs": as_json(dict(outputs or {})), "error": error,
              "trace_id": trace_id}
    return RunRecord(f"run {status}", lambda cat: cat.run("run_finish", params), trace_id=trace_id,
                     detail=f"{counted(candidate_count, 'candidate')}, {filtered_count} selected")


def finish_run(settings: Settings, trace_id: str, status: str, **fields: Any) -> None:
    """run_finished(trace_id, status, **fields), committed alone."""
    commit_record(settings, run_finished(trace_id, status, **fields))


def published_report(settings: Settings, trace_id: str) -> dict[str, str] | None:
    """The report the run published, its last step ({md, html, json}: where
    each is in the lake); None when it published none."""
    with open_catalog(settings, "governed run: its report", read_only=True) as catalog:
        rows = catalog.rows("run_report", [trace_id])
        if not rows:
            return None
        return {name: catalog.lake.uri(key) for name, key in zip(("md", "html", "json"), rows[0])}


@dataclass(frozen=True)
class ClosedRun:
    """A run closed for its dead process: `interrupted` with `message` as its
    error, or `complete` when it had published its report."""
    trace_id: str
    task_id: str
    status: str
    message: str


def close_dead_runs(settings: Settings) -> list[ClosedRun]:
    """Close the runs still 'running' whose process has ended (kill -9, a
    crash, a restart): nothing else would ever end them. A run that had
    published its report, its last step, is complete (the process died
    before it could record so); any other is interrupted. Only runs of this
    host can be judged. Returns the runs it closed, so that their logs can
    be ended too."""
    def close(catalog: Catalog) -> list[ClosedRun]:
        closed = []
        for trace_id, task_id, pid, process_started, published in catalog.rows("run_running_on_host", [here.host]):
            process = ProcessIdentity(here.host, pid, process_started)
            if not process.ended():
                continue
            if published:
                catalog.run("run_close_published", [trace_id])
                closed.append(ClosedRun(trace_id, task_id, "complete", f"complete: the process that ran it "
                                        f"({process.describe()}) ended after it published its report"))
            else:
                error = f"interrupted: the process that ran it ({process.describe()}) ended before the run did"
                catalog.run("run_interrupt", [error, trace_id])
                closed.append(ClosedRun(trace_id, task_id, INTERRUPTED, error))
        catalog.describe_commit("runs closed", ", ".join(run.trace_id for run in closed),
                                task_ids={run.task_id for run in closed})
        return closed

    here = ProcessIdentity.current()
    with open_catalog(settings, "governed run: close dead runs") as catalog:
        closed = catalog.transaction(close, action="runs closed")
        for task_id in {run.task_id for run in closed}:
            refresh_exports(catalog, task_id, ("runs",))
    return closed


# -- the outcome ------------------------------------------------------------------

def record_outcome(settings: Settings, trace_id: str, task_id: str, selections: Sequence[Candidate],
                   drops: Sequence[Drop], publishers: Sequence[Publisher], output: Mapping | None = None,
                   trace: "TraceLog | None" = None) -> str | None:
    """Replace the run's selections (rank = position), drops and publishers,
    in one transaction (the run's `trace` commits it, when given); with
    `output` (tasks.selection.gates.build_output), also publish it as the
    lake file output.json of the run and return its key."""
    files, key = {}, None
    if output is not None:
        key = Lake.run_key(check_identifier(task_id), check_identifier(trace_id), OUTPUT_FILE)
        files[key] = json.dumps(output, ensure_ascii=False, indent=2, default=str).encode()

    def change(cat: Catalog) -> None:
        cat.set_variables(outcome_trace_id=trace_id)
        cat.run("run_outcome_clear")
        _insert_outcome(cat, trace_id, task_id, selections, drops, publishers)

    record = RunRecord("outcome", change, task_id=task_id, files=files,
                       detail=f"{len(selections)} selected, {len(drops)} dropped, "
                              f"{counted(len(publishers), 'publisher')}")
    if trace is not None:
        trace.commit(record)
    else:
        commit_record(settings, record)
    return key


def _insert_outcome(cat: Catalog, trace_id: str, task_id: str, selections: Sequence[Candidate],
                    drops: Sequence[Drop], publishers: Sequence[Publisher]) -> None:
    ids = {"trace_id": trace_id, "task_id": task_id}
    cat.run("selection_insert", ids | {
        "source_ids": [c.source_id for c in selections], "urls": [c.url for c in selections],
        "titles": [c.title for c in selections], "qualities": [c.quality for c in selections],
        "ranks": list(range(1, len(selections) + 1))})
    cat.run("drop_insert", ids | {
        "source_ids": [d.source_id for d in drops], "urls": [d.url for d in drops], "titles": [d.title for d in drops],
        "stages": [d.stage for d in drops], "reasons": [d.reason for d in drops]})
    cat.run("publisher_insert", ids | {
        "publishers": [p.publisher for p in publishers], "article_counts": [p.article_count for p in publishers],
        "sample_titles": [as_json(p.sample_titles) for p in publishers],
        "source_urls": [as_json(p.source_urls) for p in publishers]})
    pairs = [(p.publisher, s) for p in publishers for s in p.source_ids]
    cat.run("publisher_source_insert", [trace_id, task_id, [p for p, _ in pairs], [s for _, s in pairs]])
