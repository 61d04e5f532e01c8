"""The trace of a governed run (docs/research.md): every stage and gate event as
a line of the run's trace.jsonl and as a `run_events` row.

A run's trace lines become rows in the commits of the run's own records
(RunRecord: its start, its outcome, its end, see tasks/records/runs.py),
not one commit each: the lake's history stays a list of what the run did,
and the trace file holds every line at once either way.

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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from schemas.bundle import check_identifier
from schemas.governance import GateResult, StageRecord
from tasks.common.settings import Settings
from tasks.common.text import counted
from tasks.records.runs import RunRecord, as_json, commit_record
from tasks.lake.catalog import Catalog, CatalogBusy, CatalogError
from tasks.lake.files import Lake, end_torn_line, run_logs_root

log = logging.getLogger(__name__)

TRACE_FILE = "trace.jsonl"
EVENT_KINDS = ("stage", "gate", "run")


def _now() -> datetime:
    return datetime.now(timezone.utc)


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
                handle.write(as_json(line) + "\n")
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
                "details": [as_json(e["detail"]) for e in lines]})

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
