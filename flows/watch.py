"""A watch round: the watch's question researched afresh into its topic,
then what changed since the topic's previous round — recorded in the lake
(`changes`), said first in the round's report, shown as a Prefect markdown
artifact, and announced by a Prefect event automations can act on
(searchlake.watch.changed or searchlake.watch.unchanged).

Each watch's rounds run on an interval schedule: a Prefect deployment of
`watch_round` on the work pool `searchlake` (flows/watch_schedule.py)."""

from __future__ import annotations

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.events import emit_event
from prefect.runtime import flow_run

from flows.artifacts import artifact_key
from flows.research import timed_flow
from flows.research_checks import check_request
from flows.research_tasks import BUSY
from schemas.report import ResearchReport
from schemas.request import ResearchRequest
from schemas.watch import Change, Watch, change_counts
from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.lake.watches import begin_round, end_round, fail_round, get_watch, round_counts
from tasks.reporting.changes import answer_rows, changes_markdown, report_language, summary, with_changes
from tasks.reporting.markdown import md_text
from tasks.reporting.report import load_report, store_report
from tasks.synthesis.labels import detect_language

CHANGED_EVENT = "searchlake.watch.changed"
UNCHANGED_EVENT = "searchlake.watch.unchanged"


@flow(name="searchlake-watch-round")
def watch_round(name: str) -> dict:
    """One round of the watch `name`; the round's number, what changed (by kind) and the words."""
    settings = Settings()
    watch, number = begin_round_task(name, settings)
    try:
        # checked when the round starts: the worker's keys and PIPELINE_* budget
        request = check_request(ResearchRequest.build(question=watch.question, task_id=watch.topic,
                                                      **watch.params.model_dump()))
        timed_flow(request)(**request.flow_parameters(), query_prefix=f"r{number}.")
    except BaseException as exc:
        fail_round_task(watch, number, f"{type(exc).__name__}: {exc}".splitlines()[0], settings)
        raise
    previous, changes, sentence = end_round_task(watch, number, settings)
    tell(watch, number, previous, changes, sentence)
    return {"watch": name, "topic": watch.topic, "round": number, "previous_round": previous,
            "changes": change_counts(changes), "summary": sentence}


@task(name="begin-watch-round", **BUSY)
def begin_round_task(name: str, settings: Settings) -> tuple[Watch, int]:
    with open_catalog(settings, "watch: begin round") as catalog:
        watch = get_watch(catalog, name)
        return watch, begin_round(catalog, watch, flow_run.get_id())


@task(name="fail-watch-round", **BUSY)
def fail_round_task(watch: Watch, number: int, error: str, settings: Settings) -> None:
    with open_catalog(settings, "watch: round failed") as catalog:
        fail_round(catalog, watch.topic, number, error)


@task(name="end-watch-round", **BUSY)
def end_round_task(watch: Watch, number: int, settings: Settings) -> tuple[int | None, list[Change], str]:
    """Keep the round's sources and answer, compute what changed, and put it
    in words at the top of the round's report."""
    with open_catalog(settings, "watch: read the report", read_only=True) as catalog:
        report = ResearchReport.model_validate_json(load_report(catalog, watch.topic, "json"))
    with open_catalog(settings, "watch: changes") as catalog:
        previous, changes = end_round(catalog, watch.topic, number, answer_rows(report))
        sentence = summary(changes, number, previous, *round_counts(catalog, watch.topic, number),
                           language=report_language(report))
        store_report(catalog, watch.topic, with_changes(report, sentence, changes), report.synthesis, report.model)
    return previous, changes, sentence


def round_markdown(watch: Watch, number: int, sentence: str, changes: list[Change]) -> str:
    """The round's artifact as Prefect's UI renders it: the question and the
    changes as text (md_text), never an image, a link or HTML."""
    return "\n".join([f"# Watch {watch.name}: round {number}", "", f"*{md_text(watch.question)}*", "",
                      *changes_markdown(sentence, changes, language=detect_language(watch.question))])


def changed(changes: list[Change]) -> bool:
    return any(c.kind != "answer_unchanged" for c in changes)


def tell(watch: Watch, number: int, previous: int | None, changes: list[Change], sentence: str) -> None:
    """The round's markdown artifact (one history per watch) and its event."""
    markdown = round_markdown(watch, number, sentence, changes)
    create_markdown_artifact(markdown, key=artifact_key("watch-changes", watch.name),
                             description=f"what changed in round {number} of watch {watch.name}")
    emit_event(CHANGED_EVENT if changed(changes) else UNCHANGED_EVENT,
               resource={"prefect.resource.id": f"searchlake.watch.{watch.name}",
                         "prefect.resource.name": f"searchlake watch {watch.name}",
                         "searchlake.topic": watch.topic},
               payload={"watch": watch.name, "topic": watch.topic, "round": number, "previous_round": previous,
                        "summary": sentence, **change_counts(changes)})
