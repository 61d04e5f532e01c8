"""`searchlake research` through a running `searchlake serve`: the run starts
in that long-lived process (Prefect already imported and reachable), and this
command follows the run's events file — the same lake, so the same disk — to
draw the terminal progress, then prints the summary as a local run does:
from the run's last event, which carries it, without opening the lake."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from flows.cli.common import UserError, err
from schemas.events import ProgressEvent
from schemas.request import ResearchRequest
from tasks.common.settings import Settings
from tasks.records.summary import RunSummary

HANDOFF_TIMEOUT = 300.0  # s for the server to start the run (Prefect may be starting there)


@dataclass(frozen=True)
class HandedOff:
    """A run that ran in a server: its trace id, and the summary its last event carried (None: read the lake)."""

    trace_id: str
    summary: RunSummary | None


def hand_off(config: Settings, request: ResearchRequest, details: bool = False) -> HandedOff | None:
    """The run started in a server of this home and these settings (started
    now when there is none, see flows/cli/autoserve.py), followed to its
    end; None when the run is to run here."""
    from flows.cli.autoserve import server_for
    from tasks.server.handoff import fingerprint
    record = server_for(config)
    if record is None:
        return None
    import httpx
    from schemas.serve import HandoffRequest
    body = HandoffRequest(**request.model_dump(), fingerprint=fingerprint(config, record.salt))
    try:
        response = httpx.post(f"{record.url}/api/research", content=body.model_dump_json(),
                              headers={"content-type": "application/json", **record.headers},
                              timeout=httpx.Timeout(HANDOFF_TIMEOUT, connect=2.0))
    except httpx.HTTPError:
        return None  # not answering: run here
    if response.status_code == 409:
        err.print(f"the searchlake serve at {record.url} runs with other settings: running here",
                  markup=False, highlight=False)
        return None
    if response.status_code in (404, 405):
        return None  # an older or a read-only server: run here
    if response.status_code != 200:
        raise UserError(_refusal(response, record.url))
    doc = response.json()
    err.print(f"running in searchlake serve at {record.url} (watch it at {record.url}/tasks/{doc['task_id']}/runs/"
              f"{doc['run_id']})", markup=False, highlight=False)
    last = follow_in_terminal(config, doc["task_id"], doc["run_id"], record.pid, details)
    summary = RunSummary.from_event(last.payload.metadata)
    ours = summary is not None and (summary.trace_id, summary.task_id) == (doc["run_id"], doc["task_id"])
    return HandedOff(doc["run_id"], summary if ours else None)


def _refusal(response, url: str) -> str:
    """Why the server refused the run: its one-line error, whatever the body."""
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return f"the searchlake serve at {url} refused the run (HTTP {response.status_code})"


def follow_in_terminal(config: Settings, task_id: str, run_id: str, server_pid: int,
                       details: bool = False) -> ProgressEvent:
    """Draw the run's events as the local terminal view does, until its last
    event (or until the server running it is gone); the last event."""
    from flows.cli.console import TerminalObserver
    from tasks.lake.files import run_logs_root
    from tasks.server.events import events_path
    path = events_path(run_logs_root(config), task_id, run_id)
    with TerminalObserver(err, details) as watch, open(path, encoding="utf-8") as handle:
        drawing = _Drawing(watch)
        for event in _events(handle, task_id, server_pid):
            if event.is_terminal:
                return event
            drawing.draw(event)
    raise AssertionError("unreachable: _events ends only with the terminal event or an error")


def _events(handle: TextIO, task_id: str, server_pid: int) -> Iterator[ProgressEvent]:
    """The run's events as the server appends them, its terminal one last."""
    from tasks.server.events import parse_line
    for line in _whole_lines(handle, task_id, server_pid):
        event = parse_line(line)
        if event is None:
            continue
        yield event
        if event.is_terminal:
            return


def _whole_lines(handle: TextIO, task_id: str, server_pid: int) -> Iterator[str]:
    """Lines of a file being written, each once it is whole; waits at its end
    while the server that writes it lives."""
    from tasks.common.processes import alive
    pending = ""
    while True:
        chunk = handle.readline()
        if not chunk:
            if not alive(server_pid):
                raise UserError(f"the searchlake serve process running {task_id} stopped; "
                                f"run again with --task-id {task_id} to resume")
            time.sleep(0.05)
            continue
        pending += chunk
        if pending.endswith("\n"):
            yield pending
            pending = ""


class _Drawing:
    """One run's events drawn on the terminal observer."""

    def __init__(self, watch) -> None:
        self.watch = watch
        self.planned = False  # whether the current search's bar is drawn

    def draw(self, event) -> None:
        metadata = event.payload.metadata or {}
        if event.step_type == "pipeline":
            self.watch.plan(metadata.get("plan", []))
        elif "gate" in metadata:
            self._gate(metadata)
        elif event.status == "start":
            self.watch.step(event.step_type, event.label)
            self.planned = False  # a deeper or fallback search draws a bar of its own
        elif "provider" in metadata and "total" in metadata:
            self._search_done(metadata)

    def _gate(self, metadata: dict) -> None:
        if metadata["outcome"] != "pass":
            self.watch.note(f"gate {metadata['gate']}: {metadata['outcome']} — {metadata['reason']}")

    def _search_done(self, metadata: dict) -> None:
        if not self.planned:
            self.watch.searches_planned(metadata["total"])
            self.planned = True
        self.watch.search_done(metadata["provider"], metadata["query_id"], metadata["items"], metadata["failed"])
