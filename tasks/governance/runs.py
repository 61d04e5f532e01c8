"""The record of a governed run (spec 003 §7-8): one `runs` row from start to
finish, every stage and gate event both as a line of the run's trace.jsonl
and as a `run_events` row, and the outcome (`selections`, `drops`,
`publishers`, `publisher_sources`). Tables: sql/schema_60_governance.sql;
views: sql/views_60_governance.sql.

Every function opens its own short catalog session: a run lasts minutes and
must not hold the catalog lock (other commands wait on it) between its
records. Do not call them while holding the catalog yourself.

A run's trace lines become rows in the commits of the run's own records
(RunRecord: its start, its outcome, its end), not one commit each: the
lake's history stays a list of what the run did, and the trace file holds
every line at once either way.

The trace file sits at the lake key Lake.run_key(task, trace, "trace.jsonl")
under the local lake root; JSONL is appended to, which object stores cannot
do, so with a remote lake it sits under <home>/events/ instead (as the
progress events do, see tasks.lake.files.run_logs_root).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


from schemas.bundle import check_identifier
from schemas.governance import Budget, Drop, GateResult, Policy, Publisher, StageRecord
from tasks.common.processes import ProcessIdentity
from tasks.lake.catalog import Catalog, CatalogBusy, CatalogError, current_flow_run, open_catalog
from tasks.common.settings import Settings
from tasks.common.text import counted
from tasks.lake.exports import refresh_exports
from tasks.lake.files import Lake, LakeWrite, end_torn_line, run_logs_root
from tasks.governance.filters import Candidate

log = logging.getLogger(__name__)

TRACE_FILE = "trace.jsonl"
OUTPUT_FILE = "output.json"
FINAL_STATUSES = ("complete", "failed", "timed_out")
INTERRUPTED = "interrupted"  # its process ended before it did (killed, crashed, the machine stopped)
EVENT_KINDS = ("stage", "gate", "run")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _json(value: Any) -> str:
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
                budget: Budget, policy: Policy | None = None, process: ProcessIdentity | None = None) -> RunRecord:
    """The `runs` row of a run that begins (status 'running'), with the
    process that runs it (this one unless told); committing it again for
    the same trace changes nothing."""
    process = process or ProcessIdentity.current()
    params = {"trace_id": trace_id, "task_id": task_id, "question": question, "demand_id": demand_id,
              "policy_source": policy_source, "budget": _json(budget.to_dict()),
              "policy": _json(policy.to_dict()) if policy else None, "host": process.host, "pid": process.pid,
              "process_started": process.started, "flow_run_id": current_flow_run()}
    return RunRecord("run started", lambda cat: cat.run("run_start", params), task_id=task_id)


def start_run(settings: Settings, trace_id: str, task_id: str, question: str, demand_id: str | None,
              policy_source: str, budget: Budget, policy: Policy | None = None,
              process: ProcessIdentity | None = None) -> None:
    commit_record(settings, run_started(trace_id, task_id, question, demand_id, policy_source, budget, policy,
                                        process))


def run_finished(trace_id: str, status: str, *, candidate_count: int = 0, filtered_count: int = 0,
                 publisher_count: int = 0, elapsed_seconds: float = 0.0,
                 stage_history: Sequence[StageRecord | Mapping] = (), outputs: Mapping[str, Any] | None = None,
                 error: str | None = None) -> RunRecord:
    """The run's row closed with its final status (complete | failed | timed_out)."""
    if status not in FINAL_STATUSES:
        raise ValueError(f"run status {status!r} is not one of {', '.join(FINAL_STATUSES)}")
    history = [s.to_dict() if isinstance(s, StageRecord) else dict(s) for s in stage_history]
    params = {"status": status, "candidate_count": candidate_count, "filtered_count": filtered_count,
              "publisher_count": publisher_count, "elapsed_seconds": round(float(elapsed_seconds), 3),
              "stage_history": _json(history), "outputs": _json(dict(outputs or {})), "error": error,
              "trace_id": trace_id}
    return RunRecord(f"run {status}", lambda cat: cat.run("run_finish", params), trace_id=trace_id,
                     detail=f"{counted(candidate_count, 'candidate')}, {filtered_count} selected")


def finish_run(settings: Settings, trace_id: str, status: str, **fields: Any) -> None:
    """run_finished(trace_id, status, **fields), committed alone."""
    commit_record(settings, run_finished(trace_id, status, **fields))


@dataclass(frozen=True)
class InterruptedRun:
    trace_id: str
    task_id: str
    error: str


def close_dead_runs(settings: Settings) -> list[InterruptedRun]:
    """Mark 'interrupted' the runs still 'running' whose process has ended
    (kill -9, a crash, a restart): nothing else would ever end them. Only
    runs of this host can be judged. Returns the runs it closed, so that
    their logs can be ended too."""
    def close(catalog: Catalog) -> list[InterruptedRun]:
        closed = []
        for trace_id, task_id, pid, process_started in catalog.rows("run_running_on_host", [here.host]):
            process = ProcessIdentity(here.host, pid, process_started)
            if process.ended():
                error = f"interrupted: the process that ran it ({process.describe()}) ended before the run did"
                catalog.run("run_interrupt", [error, trace_id])
                closed.append(InterruptedRun(trace_id, task_id, error))
        catalog.describe_commit("runs interrupted", ", ".join(run.trace_id for run in closed),
                                task_ids={run.task_id for run in closed})
        return closed

    here = ProcessIdentity.current()
    with open_catalog(settings, "governed run: close dead runs") as catalog:
        closed = catalog.transaction(close, action="runs interrupted")
        for task_id in {run.task_id for run in closed}:
            refresh_exports(catalog, task_id, ("runs",))
    return closed


# -- the outcome ------------------------------------------------------------------

def record_outcome(settings: Settings, trace_id: str, task_id: str, selections: Sequence[Candidate],
                   drops: Sequence[Drop], publishers: Sequence[Publisher], output: Mapping | None = None,
                   trace: "TraceLog | None" = None) -> str | None:
    """Replace the run's selections (rank = position), drops and publishers,
    in one transaction (the run's `trace` commits it, when given); with
    `output` (tasks.governance.gates.build_output), also publish it as the
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
        "sample_titles": [_json(p.sample_titles) for p in publishers],
        "source_urls": [_json(p.source_urls) for p in publishers]})
    pairs = [(p.publisher, s) for p in publishers for s in p.source_ids]
    cat.run("publisher_source_insert", [trace_id, task_id, [p for p, _ in pairs], [s for _, s in pairs]])


# -- the trace --------------------------------------------------------------------

def trace_path(settings: Settings, task_id: str, trace_id: str) -> Path:
    """The run's trace.jsonl (ids are checked first: they become path parts)."""
    return run_logs_root(settings) / Lake.run_key(check_identifier(task_id), check_identifier(trace_id), TRACE_FILE)


class TraceLog:
    """Appends one flushed JSONL line per stage/gate/run event to the run's
    trace.jsonl and inserts the same event as a run_events row. The file is
    the primary trace; rows follow in fewer commits: the lines wait for the
    next commit of the run's own records (`commit`, or a run line given its
    record), a run line, or `flush()`. A catalog that is busy (another
    command holds it past SEARCHLAKE_LOCK_TIMEOUT) or failing when the lines
    go alone costs the run nothing; they wait for the next chance (the
    problem is logged and kept in `db_errors`). A trace resumed later first
    sends the lines of its file that its rows lack. Stage events also build
    the run's stage history (`history`)."""

    def __init__(self, settings: Settings, task_id: str, trace_id: str):
        self.settings = settings
        self.task_id = task_id
        self.trace_id = trace_id
        self.path = trace_path(settings, task_id, trace_id)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.history: list[StageRecord] = []
        self.db_errors: list[str] = []
        self._lock = threading.Lock()  # stages may report from worker threads
        # Lines not yet known to be rows: a resumed trace's file may hold some
        # (its process could not send them), so the table is asked first.
        end_torn_line(self.path)
        self._unsent = _read_lines(self.path)
        self._ask_table = bool(self._unsent)
        # A resumed trace continues its numbering after the lines already there.
        self._seq = len(self._unsent)

    def event(self, kind: str, name: str, status: str, detail: Mapping[str, Any] | None = None, *,
              record: RunRecord | None = None) -> dict:
        """Append a line; a run line is sent at once with the lines waiting
        before it, in the commit of `record` when given (which must succeed)."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"event kind {kind!r} is not one of {', '.join(EVENT_KINDS)}")
        with self._lock:
            self._seq += 1
            line = {"trace_id": self.trace_id, "task_id": self.task_id, "seq": self._seq, "at": _now().isoformat(),
                    "kind": kind, "name": name, "status": status, "detail": dict(detail or {})}
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(_json(line) + "\n")
                handle.flush()
            self._unsent.append(line)
            if record is not None:
                self._commit(record)
            elif kind == "run":
                self._send()
        return line

    def commit(self, record: RunRecord) -> None:
        """Commit `record` and the lines waiting to be rows together. Raises
        when the commit fails (the lines then wait for the next chance)."""
        with self._lock:
            self._commit(record)

    def flush(self) -> None:
        """Send the lines that are not rows yet (a run's end calls it)."""
        with self._lock:
            if self._unsent:
                self._send()

    def _send(self) -> None:
        try:
            self._commit(RunRecord("trace", lambda cat: None, task_id=self.task_id,
                                   detail=counted(len(self._unsent), "line")))
        except (CatalogBusy, CatalogError) as exc:
            problem = f"{len(self._unsent)} trace lines (up to {self._seq}) wait for run_events: {exc}"
            log.warning("%s", problem)
            self.db_errors.append(problem)

    def _commit(self, record: RunRecord) -> None:
        try:
            commit_record(self.settings, record, self._insert_unsent)
        except BaseException:
            self._ask_table = True  # a failed commit may still have landed: the table decides next time
            raise
        self._unsent, self._ask_table = [], False

    def _insert_unsent(self, cat: Catalog) -> None:
        lines = self._unsent
        if self._ask_table:
            sent = {seq for (seq,) in cat.rows("run_event_seqs", [self.trace_id])}
            lines = [line for line in lines if line["seq"] not in sent]
        if lines:
            cat.run("run_event_insert", {
                "trace_id": self.trace_id, "task_id": self.task_id, "seqs": [e["seq"] for e in lines],
                "ats": [e["at"] for e in lines], "kinds": [e["kind"] for e in lines],
                "names": [e["name"] for e in lines], "statuses": [e["status"] for e in lines],
                "details": [_json(e["detail"]) for e in lines]})

    def gate(self, result: GateResult) -> dict:
        return self.event("gate", result.gate, result.outcome, {"reason": result.reason, **result.metrics})

    def run(self, status: str, detail: Mapping[str, Any] | None = None, *, record: RunRecord | None = None) -> dict:
        return self.event("run", "run", status, detail, record=record)

    def stage_done(self, name: str, status: str, *, attempt: int = 1, started_at: datetime | None = None,
                   seconds: float | None = None, detail: Mapping[str, Any] | None = None) -> StageRecord:
        """Record a stage attempt that ended (complete, failed, skipped)."""
        record = StageRecord(name=name, status=status, attempt=attempt,
                             started_at=(started_at or _now()).isoformat(),
                             seconds=None if seconds is None else round(seconds, 3), detail=dict(detail or {}))
        self.event("stage", name, status, {"attempt": attempt, "seconds": record.seconds, **record.detail})
        self.history.append(record)
        return record

    @contextmanager
    def stage(self, name: str, attempt: int = 1) -> Iterator[dict]:
        """Time a stage: a 'running' event now, then 'complete' with the
        detail the body filled in, or 'failed' with the error (re-raised)."""
        detail: dict[str, Any] = {}
        started_at, started = _now(), time.monotonic()
        self.event("stage", name, "running", {"attempt": attempt})
        try:
            yield detail
        except BaseException as exc:
            detail["error"] = f"{type(exc).__name__}: {exc}"
            self.stage_done(name, "failed", attempt=attempt, started_at=started_at,
                            seconds=time.monotonic() - started, detail=detail)
            raise
        self.stage_done(name, "complete", attempt=attempt, started_at=started_at,
                        seconds=time.monotonic() - started, detail=detail)

    def attempts(self, name: str) -> int:
        """How many times a stage ran so far (for the next attempt number)."""
        return sum(1 for r in self.history if r.name == name)


def _read_lines(path: Path) -> list[dict]:
    """The trace lines already in the file (a resumed trace); a torn last line is left out."""
    if not path.exists():
        return []
    lines = []
    with open(path, encoding="utf-8") as handle:
        for text in handle:
            try:
                lines.append(json.loads(text))
            except ValueError:
                continue
    return lines


# -- the summary ------------------------------------------------------------------

@dataclass
class RunSummary:
    """What a run prints at its end (spec 003 §7, RunSummary)."""

    trace_id: str
    task_id: str
    status: str
    policy_source: str | None = None
    candidate_count: int = 0
    filtered_count: int = 0
    publisher_count: int = 0
    elapsed_seconds: float = 0.0
    stage_history: list[dict] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def exit_code(self) -> int:
        """0 for a complete run, 1 otherwise (spec 003 ⑧)."""
        return 0 if self.status == "complete" else 1

    def lines(self) -> list[str]:
        out = [
            f"trace id:      {self.trace_id}",
            f"task id:       {self.task_id}",
            f"status:        {self.status}",
            f"policy source: {self.policy_source or '-'}",
            f"candidates:    {self.candidate_count}",
            f"filtered:      {self.filtered_count}",
            f"publishers:    {self.publisher_count}",
            f"elapsed:       {self.elapsed_seconds:.1f} s",
            "stages:",
        ]
        for stage in self.stage_history:
            seconds = stage.get("seconds")
            timing = f" {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
            out.append(f"  {stage.get('name')}: {stage.get('status')} (attempt {stage.get('attempt', 1)}){timing}")
        if not self.stage_history:
            out.append("  (none)")
        out.append("outputs:" if self.outputs else "outputs:       (none)")
        out += [f"  {name}: {_shown(value)}" for name, value in self.outputs.items()]
        if self.error:
            out.append(f"error:         {self.error}")
        return out

    def headline(self) -> str:
        """How the run ended, how long it took and what it found, in one line."""
        return (f"{self.status} in {self.elapsed_seconds:.1f} s — {self.candidate_count} candidate sources, "
                f"{self.filtered_count} selected, {self.publisher_count} publishers")

    @classmethod
    def load(cls, settings: Settings, trace_id: str) -> "RunSummary | None":
        """The summary of a recorded run, None when there is no such trace."""
        with open_catalog(settings, "governed run: summary", read_only=True) as catalog:
            rows = catalog.rows("run_summary", [trace_id])
        if not rows:
            return None
        (trace, task, status, source, candidates, filtered, publishers, elapsed, history, outputs, error) = rows[0]
        return cls(trace, task, status, source, candidates or 0, filtered or 0, publishers or 0, elapsed or 0.0,
                   json.loads(history) if history else [], json.loads(outputs) if outputs else {}, error)


def _shown(value) -> str:
    """An output value as a person reads it: no None, no Python repr of a mapping or list."""
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(_shown, value))
    return str(value)
