"""The MCP `research` tool's run (flows/mcp_server.py): started by the
ResearchLauncher — the one `searchlake serve` starts the page's runs with —
in a thread of this long-lived process, and followed through the run's
events file, whose events become the call's progress notifications, until
the run's last event; then the run's record and report are read from the
lake. Over stdio that process is `searchlake mcp`, which the agent keeps
running, so Prefect is imported and its API reached once, as in `serve`;
over HTTP it is `searchlake serve` itself."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from flows.launcher import ResearchLauncher
from schemas.agent import ResearchOutcome
from schemas.events import ProgressEvent
from schemas.request import ResearchRequest
from schemas.errors import UserError
from tasks.common.settings import Settings
from tasks.lake.files import run_logs_root
from tasks.server.events import events_path, parse_line, runs_of_task

FIRST_EVENT_DEADLINE = 300.0  # s for a started run to write its first event (Prefect may still be starting)
POLL_SECONDS = 0.1
REPORT_URI = "searchlake://tasks/{task_id}/report.{format}"

# percent done (0-100), what is happening
SendProgress = Callable[[float, str], Awaitable[None]]


class RunDidNotStart(UserError):
    """The run could not start (Prefect unreachable, …), or left no record."""


class RunFailed(UserError):
    """The run ended without its report: a gate stopped it, it ran out of time, …"""


@dataclass(frozen=True)
class FinishedRun:
    outcome: ResearchOutcome
    text: str  # the answer as the terminal shows it, then how the run went


def report_uri(task_id: str, fmt: str = "md") -> str:
    return REPORT_URI.format(task_id=task_id, format=fmt)


async def research_run(settings: Settings, launcher: ResearchLauncher, request: ResearchRequest,
                       send_progress: SendProgress) -> FinishedRun:
    """Run `request` (checked already) to its end, reporting progress; its
    answer, or RunDidNotStart / RunFailed in one line."""
    root = run_logs_root(settings)
    before = set(runs_of_task(root, request.task_id)) if request.task_id else set()
    task_id = await anyio.to_thread.run_sync(launcher.research, request)
    run_id = await _first_run(launcher, root, task_id, before)
    progress = _Progress(send_progress)
    async for event in _events_until_the_last(launcher, events_path(root, task_id, run_id), task_id):
        await progress.send(event)
    return await anyio.to_thread.run_sync(finished_run, settings, run_id)


async def _first_run(launcher: ResearchLauncher, root: Path, task_id: str, before: set[str]) -> str:
    """The id of the run just started: the one whose events file appears."""
    deadline = time.monotonic() + FIRST_EVENT_DEADLINE
    while time.monotonic() < deadline:
        new = set(runs_of_task(root, task_id)) - before
        if new:
            return new.pop()
        error = launcher.launch_error(task_id)
        if error:
            raise RunDidNotStart(f"the run of task {task_id} did not start: {error}")
        await anyio.sleep(POLL_SECONDS)
    raise RunDidNotStart(f"the run of task {task_id} wrote no event within {FIRST_EVENT_DEADLINE:.0f} s")


async def _events_until_the_last(launcher: ResearchLauncher, path: Path, task_id: str) -> AsyncIterator[ProgressEvent]:
    """The run's events as its thread appends them, up to its last one (or
    until the thread has ended and the file holds nothing more)."""
    with open(path, encoding="utf-8") as handle:
        pending = ""
        while True:
            ended = not launcher.is_running(task_id)  # asked before reading: whatever it wrote is in the file
            chunk = handle.readline()
            if not chunk:
                if ended:
                    return
                await anyio.sleep(POLL_SECONDS)
                continue
            pending += chunk
            if not pending.endswith("\n"):
                continue  # a line still being written
            event, pending = parse_line(pending), ""
            if event is None:
                continue
            yield event
            if event.is_terminal:
                return


class _Progress:
    """Events as progress notifications. MCP asks that each notification's
    progress be larger than the last, while a run's progress only never goes
    back (a gate's verdict moves nothing): an event that does not move it is
    sent a hundredth of a percent on."""

    STEP = 0.01

    def __init__(self, send: SendProgress):
        self._send = send
        self._last = -1.0

    async def send(self, event: ProgressEvent) -> None:
        percent = max(round(event.progress * 100, 2), round(self._last + self.STEP, 2))
        if percent > 100:
            return
        self._last = percent
        await self._send(percent, progress_message(event))


def progress_message(event: ProgressEvent) -> str:
    """What the event says, in one line: the step, a finished search, a gate's verdict, an error."""
    metadata = event.payload.metadata or {}
    if "gate" in metadata:
        return f"gate {metadata['gate']}: {metadata['outcome']} — {metadata['reason']}"
    if "provider" in metadata and "total" in metadata:
        failed = ", failed" if metadata.get("failed") else ""
        return (f"{event.label}: {metadata['done']}/{metadata['total']} "
                f"({metadata['provider']} {metadata['query_id']}: {metadata['items']} results{failed})")
    if event.status == "error":
        return f"{event.label}: {event.payload.error}"
    if event.is_terminal:
        return "done"
    return event.label


def finished_run(settings: Settings, trace_id: str) -> FinishedRun:
    """The run's answer and how it went, from the lake; RunFailed for a run
    that ended without a report."""
    from tasks.records.summary import RunSummary
    summary = RunSummary.load(settings, trace_id)
    if summary is None:
        raise RunDidNotStart(f"the run {trace_id} left no record in the lake")
    if summary.status != "complete":
        raise RunFailed(f"the research run of task {summary.task_id} {summary.status}: {summary.error or '-'} "
                        f"(trace id {trace_id}; research again with task_id {summary.task_id} to resume)")
    answer, lines = _answer(settings, summary.task_id)
    report = report_uri(summary.task_id) if answer is not None else None
    outcome = ResearchOutcome(task_id=summary.task_id, trace_id=trace_id, status=summary.status,
                              summary=summary.headline(), answer=answer, report=report)
    lines += ["", f"task id: {summary.task_id}   trace id: {trace_id}", f"status:  {summary.headline()}"]
    if summary.without_model:  # which stages ran without the configured model, and why
        lines.append(f"model:   {summary.without_model}")
    if report:
        lines.append(f"report:  {report} (read_report reads it; top_sources and sql say more)")
    return FinishedRun(outcome, "\n".join(lines).strip("\n"))


# lines of the answer are never wrapped: the agent's client lays the text out
UNWRAPPED = 1_000_000


def _answer(settings: Settings, task_id: str):
    """The task's report's answer, as data and as the terminal's lines."""
    from schemas.report import ResearchReport
    from tasks.lake.catalog import open_catalog
    from tasks.reporting.cited_answer import cited_answer
    from tasks.reporting.report import ReportNotFound, load_report
    from tasks.reporting.terminal import answer_lines
    try:
        with open_catalog(settings, "mcp: answer", read_only=True) as catalog:
            report = ResearchReport.model_validate_json(load_report(catalog, task_id, "json"))
    except ReportNotFound:
        return None, []
    return cited_answer(report), answer_lines(report, width=UNWRAPPED)
