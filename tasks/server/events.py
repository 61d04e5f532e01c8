"""Progress events of a run: computed by a ProgressTracker, appended by an
EventLog as JSON lines, followed live by `searchlake serve`.

The log of a run lives at the lake key `Lake.run_key(task, run, "events.jsonl")`.
It is appended to while the run works, so it must be a local file: when the
lake is local it sits under the lake root; when the lake is remote (s3://…),
object stores cannot append, and the log sits under `<home>/events/` instead,
with the same key layout.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from schemas.bundle import check_identifier
from schemas.events import PIPELINE, EventPayload, ProgressEvent
from tasks.common.settings import Settings
from tasks.lake.files import Lake, end_torn_line, run_logs_root

EVENTS_FILE = "events.jsonl"


# -- where the logs are ------------------------------------------------------

def events_path(root: Path, task_id: str, run_id: str) -> Path:
    """The log of one run. Ids are checked first: they become path parts."""
    return root / Lake.run_key(check_identifier(task_id), check_identifier(run_id), EVENTS_FILE)


def _run_key_pattern() -> re.Pattern[str]:
    # Built from Lake.run_key itself, so the layout stays defined in one place.
    template = re.escape(Lake.run_key("TASKMARK", "RUNMARK", EVENTS_FILE))
    return re.compile(template.replace("TASKMARK", r"(?P<task_id>[^/]+)")
                      .replace("RUNMARK", r"(?P<run_id>[^/]+)"))


@dataclass(frozen=True)
class RunEvents:
    task_id: str
    run_id: str
    path: Path
    size: int
    modified: float


def list_runs(root: Path) -> list[RunEvents]:
    """Every run that has an events file, most recently written first."""
    pattern = _run_key_pattern()
    found = []
    for path in root.glob(Lake.run_key("*", "*", EVENTS_FILE)):
        match = pattern.fullmatch(path.relative_to(root).as_posix())
        if match and path.is_file():
            stat = path.stat()
            found.append(RunEvents(match["task_id"], match["run_id"], path, stat.st_size, stat.st_mtime))
    return sorted(found, key=lambda r: r.modified, reverse=True)


def runs_of_task(root: Path, task_id: str) -> list[str]:
    """The run ids of one task that have an events file."""
    task_id = check_identifier(task_id)
    return [path.parent.name.split("=", 1)[-1]
            for path in root.glob(Lake.run_key(task_id, "*", EVENTS_FILE)) if path.is_file()]


# -- writing ------------------------------------------------------------------

class EventLog:
    """Appends events to one run's JSONL file, one flushed line per event, so
    a follower reading the file sees each event as soon as it is emitted."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()  # steps of one run may report from worker threads

    @classmethod
    def for_run(cls, settings: Settings, task_id: str, run_id: str) -> "EventLog":
        return cls(events_path(run_logs_root(settings), task_id, run_id))

    def emit(self, event: ProgressEvent) -> None:
        line = _wire_line(event)
        with self._lock:
            self._handle.write(line + "\n")
            self._handle.flush()

    def __call__(self, event: ProgressEvent) -> None:
        self.emit(event)

    def close(self) -> None:
        with self._lock:
            self._handle.close()

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def end_log(path: Path, error: str | None) -> None:
    """End the log of a run that cannot end it itself (its process died)
    with the run's error event at the progress it reached, or, with no
    error (the run was done), its completion, so that followers stop. A log
    that already ended, or never began, stays as it is."""
    events = read_events(path) if path.is_file() else []
    if not events or events[-1].is_terminal:
        return
    end_torn_line(path)
    with EventLog(path) as log:
        if error is None:
            log.emit(ProgressEvent(step_id=PIPELINE, step_type=PIPELINE, status="complete", progress=1.0,
                                   label=events[0].label))
        else:
            log.emit(_error_event(events[0], events[-1], error))


def _error_event(first: ProgressEvent, last: ProgressEvent, error: str) -> ProgressEvent:
    """The error event that ends a run's log at the progress it reached."""
    return ProgressEvent(step_id=PIPELINE, step_type=PIPELINE, status="error", progress=last.progress,
                         label=first.label, payload=EventPayload(error=error))


def _wire_line(event: ProgressEvent) -> str:
    return json.dumps(event.to_wire(), ensure_ascii=False, separators=(",", ":"))


def parse_line(line: str) -> ProgressEvent | None:
    """One JSONL line as an event; None for a blank or unreadable line."""
    try:
        return ProgressEvent.model_validate_json(line) if line.strip() else None
    except ValueError:
        return None


def read_events(path: Path) -> list[ProgressEvent]:
    with open(path, encoding="utf-8") as handle:
        return [e for e in map(parse_line, handle) if e is not None]


# -- progress -----------------------------------------------------------------

class Step(NamedTuple):
    step_type: str
    weight: float
    label: str
    step_id: str | None = None  # legacy UI alias; defaults to step_type


class ProgressTracker:
    """Turns step starts, partial progress and completions into events whose
    `progress` is the weighted share of the whole run that is done:
    (weights of completed steps + weight of the current step × its fraction)
    / total weight. Progress never goes backwards."""

    def __init__(self, steps: Iterable[tuple], sink: Callable[[ProgressEvent], None] | None = None,
                 label: str = "research"):
        self.steps = {s.step_type: s for s in (Step(*t) for t in steps)}
        if not self.steps:
            raise ValueError("a tracker needs at least one step")
        if any(s.weight < 0 for s in self.steps.values()):
            raise ValueError("step weights must not be negative")
        self.total = sum(s.weight for s in self.steps.values())
        if self.total <= 0:
            raise ValueError("step weights must add up to more than 0")
        self.sink = sink
        self.label = label
        self.done: set[str] = set()
        self.partial: dict[str, float] = {}
        self.last = 0.0
        self.events: list[ProgressEvent] = []

    @property
    def progress(self) -> float:
        done = sum(self.steps[t].weight for t in self.done)
        running = sum(self.steps[t].weight * f for t, f in self.partial.items() if t not in self.done)
        return min(1.0, max(self.last, (done + running) / self.total))

    def _step(self, step_type: str) -> Step:
        try:
            return self.steps[step_type]
        except KeyError:
            raise ValueError(f"unknown step {step_type!r}; steps are {sorted(self.steps)}") from None

    def _emit(self, step_type: str, step_id: str, label: str, status: str, **payload: Any) -> ProgressEvent:
        self.last = self.progress
        event = ProgressEvent(step_id=step_id, step_type=step_type, status=status, progress=round(self.last, 6),
                              label=label, payload=EventPayload(**payload))
        self.events.append(event)
        if self.sink is not None:
            self.sink(event)
        return event

    def _emit_step(self, step_type: str, status: str, **payload: Any) -> ProgressEvent:
        step = self._step(step_type)
        return self._emit(step.step_type, step.step_id or step.step_type, step.label, status, **payload)

    # -- step events
    def start(self, step_type: str, metadata: dict | None = None) -> ProgressEvent:
        self.partial[self._step(step_type).step_type] = 0.0
        return self._emit_step(step_type, "start", metadata=metadata)

    def advance(self, step_type: str, fraction: float, *, chunk: str | None = None,
                metadata: dict | None = None) -> ProgressEvent:
        """Partial progress inside a step, `fraction` in [0, 1]; streaming
        steps send their text increments as `chunk`."""
        self.partial[self._step(step_type).step_type] = min(1.0, max(0.0, fraction))
        return self._emit_step(step_type, "progress", chunk=chunk, metadata=metadata)

    def note(self, step_type: str, metadata: dict) -> ProgressEvent:
        """A progress event that moves nothing, e.g. a gate's verdict inside a step."""
        return self._emit_step(step_type, "progress", metadata=metadata)

    def complete(self, step_type: str, result: Any = None, metadata: dict | None = None) -> ProgressEvent:
        self.done.add(self._step(step_type).step_type)
        return self._emit_step(step_type, "complete", result=result, metadata=metadata)

    def error(self, step_type: str, error: str | dict, metadata: dict | None = None) -> ProgressEvent:
        return self._emit_step(step_type, "error", error=error, metadata=metadata)

    # -- the run as a whole: its terminal event ends a follower's stream
    def begin(self, metadata: dict | None = None) -> ProgressEvent:
        return self._emit(PIPELINE, PIPELINE, self.label, "start", metadata=metadata)

    def finish(self, result: Any = None, metadata: dict | None = None) -> ProgressEvent:
        self.done.update(self.steps)
        return self._emit(PIPELINE, PIPELINE, self.label, "complete", result=result, metadata=metadata)

    def fail(self, error: str | dict, metadata: dict | None = None) -> ProgressEvent:
        return self._emit(PIPELINE, PIPELINE, self.label, "error", error=error, metadata=metadata)


async def follow_events(handle, *, follow: bool, poll: float = 0.1,
                        ended: Callable[[], Awaitable[str | None]] | None = None,
                        ask_every: float = 5.0) -> AsyncIterator[tuple[str, ProgressEvent]]:
    """The events of a run's log as (line, event), from the first; with
    `follow`, keeps reading a log that is still being written until the run's
    terminal event. A partial last line is held back until its newline
    arrives; a torn or foreign line is skipped, never ends the stream. A log
    whose process died never gets its terminal event: while it is silent,
    `ended()` is asked every `ask_every` seconds, and the error it returns
    (the run reads interrupted) ends the stream with the run's error event,
    as end_log would write it (nothing is written)."""
    pending = ""
    first = last = None
    asked = time.monotonic()
    while True:
        chunk = handle.readline()
        if not chunk:
            if not follow:
                return
            if ended is not None and last is not None and time.monotonic() - asked >= ask_every:
                asked = time.monotonic()
                if (error := await ended()) is not None:
                    event = _error_event(first, last, error)
                    yield _wire_line(event), event
                    return
            await asyncio.sleep(poll)
            continue
        asked = time.monotonic()
        pending += chunk
        if not pending.endswith("\n"):
            continue
        line, pending = pending.strip(), ""
        event = parse_line(line)
        if event is None:
            continue
        first, last = first or event, event
        yield line, event
        if event.is_terminal:
            return
