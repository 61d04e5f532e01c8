"""What the web pages show, read from the lake in one short read-only catalog
session per page: the session is closed before the page is rendered, and no
page holds the catalog while a stream is open."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from schemas.report import Insight, ResearchReport
from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.server.web import charts
from tasks.reporting.layout import answer_of, caution
from tasks.reporting.report import ReportNotFound, load_report
from schemas.errors import UserError
from tasks.server.web.launching import LaunchRefused

RUNS_SHOWN = 50
SOURCES_SHOWN = 200
CHANGES_SHOWN = 100


def _records(catalog, name: str, params: list) -> list[dict[str, Any]]:
    cursor = catalog.run(name, params)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def run_interruption(settings: Settings, run_id: str) -> str | None:
    """Why the run reads interrupted (its process died, see the runs view),
    None while it does not, or while the lake cannot say (busy)."""
    from schemas.errors import TransientError
    try:
        with open_catalog(settings, "serve: run status", read_only=True) as catalog:
            rows = catalog.rows("web_run_interrupted", [run_id])
    except TransientError:
        return None
    return rows[0][0] if rows else None


@dataclass
class HomePage:
    runs: list[dict]
    asks: list[dict]


def home_page(settings: Settings) -> HomePage:
    with open_catalog(settings, "serve: runs list", read_only=True) as catalog:
        return HomePage(_records(catalog, "web_runs", [RUNS_SHOWN]), _records(catalog, "web_asks", [RUNS_SHOWN]))


@dataclass
class Answer:
    """A single-shot answer with its citations (numbered from 1)."""

    message: dict
    citations: list[dict]


@dataclass(frozen=True)
class AskedBefore:
    """What a task's latest run was asked: its question and, when the run
    recorded them as it began, its library folder, providers and target
    (None: the default library, every configured provider, the default target)."""

    question: str
    library: str | None = None
    providers: list[str] | None = None
    target: int | None = None

    @classmethod
    def of_row(cls, question: str, request: str | None) -> "AskedBefore":
        choices = (json.loads(request) if request else None) or {}
        return cls(question, choices.get("library"), choices.get("providers"), choices.get("target"))


@dataclass
class TaskPage:
    task_id: str
    report: ResearchReport | None
    runs: list[dict]
    sources: list[dict]
    drops: list[dict]
    answers: list[Answer]
    charts: list[charts.Chart] = field(default_factory=list)
    changes: list[dict] = field(default_factory=list)  # a watched topic's, the latest round first
    asked: AskedBefore | None = None  # None: no research run to ask again

    @property
    def scores(self) -> dict[str, dict]:
        return {s["source_id"]: s for s in self.sources}

    @property
    def answer(self) -> list[Insight]:
        """The report's answer: its points, each with its citations."""
        if self.report is None or self.report.synthesis is None:
            return []
        return answer_of(self.report.synthesis)

    @property
    def caution(self) -> str | None:
        """The report's caution that its passages only touch the question."""
        if self.report is None or self.report.synthesis is None:
            return None
        return caution(self.report.synthesis)


class UnknownTaskPage(UserError, LookupError):
    """No run, bundle or answer names this task."""


def _known(catalog, task_id: str) -> None:
    if not catalog.rows("web_task_known", [task_id])[0][0]:
        raise UnknownTaskPage(task_id)


def _asked(catalog, task_id: str) -> AskedBefore | None:
    rows = catalog.rows("web_task_asked", [task_id])
    return AskedBefore.of_row(*rows[0]) if rows else None


def asked_before(settings: Settings, task_id: str) -> AskedBefore:
    """What to ask again for a task (UnknownTaskPage, or LaunchRefused for a
    task without a research run: a quick answer's task)."""
    with open_catalog(settings, "serve: ask again", read_only=True) as catalog:
        _known(catalog, task_id)
        asked = _asked(catalog, task_id)
    if asked is None:
        raise LaunchRefused(f"task {task_id} has no research run to ask again")
    return asked


def stored_report(settings: Settings, task_id: str, fmt: str) -> str:
    """The text of the task's published report (UnknownTaskPage, ReportNotFound)."""
    with open_catalog(settings, "serve: report download", read_only=True) as catalog:
        _known(catalog, task_id)
        return load_report(catalog, task_id, fmt)


def task_page(settings: Settings, task_id: str) -> TaskPage:
    with open_catalog(settings, "serve: task page", read_only=True) as catalog:
        _known(catalog, task_id)
        try:
            report = ResearchReport.model_validate_json(load_report(catalog, task_id, "json"))
        except ReportNotFound:
            report = None
        answers = [Answer(message, _records(catalog, "web_message_citations", [message["message_id"]]))
                   for message in _records(catalog, "web_task_asks", [task_id])]
        page = TaskPage(task_id, report, _records(catalog, "web_task_runs", [task_id]),
                        _records(catalog, "web_task_sources", [task_id, SOURCES_SHOWN]),
                        _records(catalog, "web_task_drops", [task_id]), answers)
        per_provider = catalog.rows("web_provider_sources", [task_id])
        calls = _records(catalog, "web_provider_calls", [task_id])
        bins = dict(catalog.rows("web_score_bins", [task_id]))
        page.changes = _records(catalog, "web_task_changes", [task_id, CHANGES_SHOWN])
        page.asked = _asked(catalog, task_id)
    page.charts = charts.task_charts(per_provider, calls, bins)
    return page
