"""`searchlake watch add|list|remove|run` and `searchlake changes`: a question
researched again on a schedule, and what changed from round to round."""

from __future__ import annotations

import os
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from flows.cli.common import UserError, app, err, out, settings

watch_app = typer.Typer(no_args_is_help=True, help="Research a question again on a schedule; see what changed.")
app.add_typer(watch_app, name="watch")

LABELS = {"target": "--target", "max_results": "--max-results", "providers": "--providers", "library": "--library"}
NameArg = Annotated[str, typer.Argument(help="The watch's name (searchlake watch list)")]


@watch_app.command("add")
def add(
    question: Annotated[str, typer.Argument(help="The research question to watch")],
    every: Annotated[str, typer.Option("--every", help="How often a round runs: 6h, 30m, 1d, 90s...")],
    name: Annotated[Optional[str], typer.Option(help="The watch's name (default: from the question)")] = None,
    library: Annotated[Optional[Path], typer.Option(help="Folder of your documents (default: Python's docs)")] = None,
    providers: Annotated[Optional[str], typer.Option(help="Comma list, e.g. library,tavily,arxiv")] = None,
    target: Annotated[Optional[int], typer.Option(help="Sources to select each round")] = None,
    max_results: Annotated[Optional[int], typer.Option(min=1, max=50, help="Results per provider per query")] = None,
) -> None:
    """Watch a question: a Prefect deployment runs a round every interval on the work pool
    `searchlake`; each round lands into the watch's topic and records what changed."""
    from flows.research_checks import ResearchRefused, check_request
    from schemas.request import RequestError, ResearchRequest
    from schemas.watch import Watch, WatchParams, interval_words, parse_interval
    try:
        seconds = parse_interval(every)
        request = check_request(ResearchRequest.build(
            LABELS, question=" ".join(question.split()), library=str(library) if library else None,
            providers=providers.split(",") if providers is not None else None, target=target,
            max_results=max_results))
        params = WatchParams(library=request.library, providers=request.providers, target=request.target,
                             max_results=request.max_results)
        watch = Watch(name=name if name is not None else name_from(question), question=request.question,
                      interval_seconds=seconds, params=params)
    except (RequestError, ResearchRefused, ValueError) as exc:
        raise UserError(_first_error(exc, name)) from None
    config = settings()
    _check_free(config, watch)
    deployment_id = _prefect(lambda: _deploy(watch))
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import WatchExists, add_watch
    try:
        with open_catalog(config, "watch add") as catalog:
            add_watch(catalog, watch, deployment_id)
    except BaseException as exc:
        _prefect(lambda: _undeploy(watch.name))  # nothing half made
        if isinstance(exc, WatchExists):
            raise UserError(str(exc)) from None
        raise
    out.print(f"watching {watch.name!r} every {interval_words(watch.interval_seconds)} (topic {watch.topic}; "
              f"Prefect deployment {watch.deployment_name} on work pool searchlake)", markup=False, highlight=False)
    out.print(f"rounds run when a worker serves the pool (prefect worker start --pool searchlake); "
              f"searchlake watch run {watch.name} runs one now", markup=False, highlight=False)


def _first_error(exc: Exception, name: str | None) -> str:
    from pydantic import ValidationError
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        message = first["msg"].removeprefix("Value error, ")
        return f"invalid --name {name!r}: {message}" if where == "name" else f"invalid {where}: {message}"
    return str(exc)


def name_from(question: str) -> str:
    """A name from the question's first words: 'solar-panels-battery'."""
    words = re.findall(r"[a-z0-9]+", question.lower())
    return "-".join(words[:4])[:40].strip("-") or "watch"


def _check_free(config, watch) -> None:
    """The name is free, and its topic holds no research on another question
    (a removed watch of the same name keeps its rounds)."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import WatchExists, check_name_free
    from tasks.retrieval.plan_store import stored_plan
    with open_catalog(config, "watch add: check", read_only=True) as catalog:
        try:
            check_name_free(catalog, watch.name)
        except WatchExists as exc:
            raise UserError(str(exc)) from None
        plan = stored_plan(catalog, watch.topic)
    if plan is not None and plan.question != watch.question:
        raise UserError(f"the topic {watch.topic} holds research on another question ({plan.question!r}): "
                        f"choose another --name")


def _deploy(watch) -> str:
    from flows.watch_schedule import deploy_watch
    return deploy_watch(watch)


def _undeploy(name: str) -> bool:
    from flows.watch_schedule import undeploy_watch
    return undeploy_watch(name)


def _prefect(work):
    """Prefect's quiet logging; an unreachable Prefect API as a one-line error."""
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
    from flows.prefect_api import PrefectUnavailable
    try:
        return work()
    except PrefectUnavailable as exc:
        raise UserError(str(exc)) from None


@watch_app.command("list")
def list_command() -> None:
    """The watches: name, interval, rounds, the latest round, the question."""
    from flows.cli.tables import clipped, one_line
    from schemas.watch import interval_words
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import list_watches
    with open_catalog(settings(), "watch list", read_only=True) as catalog:
        found = list_watches(catalog)
    if not found:
        err.print("no watch yet: searchlake watch add \"QUESTION\" --every 6h starts one", markup=False,
                  highlight=False)
        return
    for watch, rounds, last in found:
        latest = last.astimezone().strftime("%Y-%m-%d %H:%M") if last else "no round yet"
        out.print(Text(watch.name))
        facts = f"every {interval_words(watch.interval_seconds)} · {rounds} round{'' if rounds == 1 else 's'} · " \
                f"latest {latest} · {one_line(watch.question)}"
        out.print(Text("  ") + clipped(facts, out.width - 2))


@watch_app.command("remove")
def remove(name: NameArg) -> None:
    """Remove a watch: its schedule and deployment go; its rounds and changes stay in the lake."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import remove_watch
    config = settings()
    watch = _known(config, name)
    _prefect(lambda: _undeploy(watch.name))
    with open_catalog(config, "watch remove") as catalog:
        remove_watch(catalog, watch.name)
    out.print(f"removed watch {name!r}; its rounds stay in the lake (searchlake changes --topic {watch.topic})",
              markup=False, highlight=False)


@watch_app.command("run")
def run(name: NameArg) -> None:
    """Run one round of a watch now, in this process. Exit status 0 when it completes."""
    watch = _known(settings(), name)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
    from flows.prefect_api import run_flow
    from flows.watch import watch_round
    state = _prefect(lambda: run_flow(watch_round, watch.name))
    if not state.is_completed():
        err.print(f"error: round of watch {name!r} failed: {' '.join(str(state.message or '').split())}",
                  markup=False, highlight=False)
        raise typer.Exit(1)
    outcome = state.result()
    out.print(outcome["summary"], markup=False, highlight=False)
    out.print(f"topic:    {watch.topic}   round {outcome['round']}", markup=False, highlight=False)
    out.print(f"more:     searchlake changes --topic {watch.name}   searchlake report --task-id {watch.topic}",
              markup=False, highlight=False)


def _known(config, name: str):
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import UnknownWatch, get_watch
    try:
        with open_catalog(config, "watch", read_only=True) as catalog:
            return get_watch(catalog, name)
    except UnknownWatch as exc:
        raise UserError(str(exc.args[0])) from None


@app.command()
def changes(
    topic: Annotated[str, typer.Option("--topic", help="A watch's name or its topic (task id)")],
    since: Annotated[Optional[str], typer.Option(
        help="Only changes since: an ISO date or time (2026-11-24, 2026-11-24T08:00), or a span back (6h, 2d)")] = None,
) -> None:
    """What changed in a watched topic, round by round (the `changes` view)."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import UnknownWatch, topic_changes, topic_known
    from schemas.watch import topic_of
    from rich.padding import Padding
    from tasks.common.text import printable
    from tasks.reporting.changes import change_line
    moment = since_moment(since)
    with open_catalog(settings(), "changes", read_only=True) as catalog:
        # a watch's name (a removed watch's too: its rounds stay), or its topic
        found = topic_changes(catalog, topic_of(topic), moment) or topic_changes(catalog, topic, moment)
        if not found and not topic_known(catalog, topic, topic_of(topic)):
            raise UnknownWatch(f"no watch or topic named {topic!r} (searchlake watch list shows the watches)")
    if not found:
        err.print(f"no changes recorded for {topic!r}" + (f" since {since}" if since else "")
                  + " (a watch's first round has nothing to compare with)", markup=False, highlight=False)
        return
    width = out.width if out.is_terminal else 80
    shown_round = None
    for number, at, change in found:
        if number != shown_round:
            shown_round = number
            out.print(Text(f"round {number} · {at.astimezone().strftime('%Y-%m-%d %H:%M')}"))
        # whole, wrapped: what changed may be the end of a long quote
        out.print(Padding(Text(printable(change_line(change))), (0, 0, 0, 2), expand=False), width=width,
                  soft_wrap=False)


# What --since takes, said whenever it refuses a value: dates far enough from
# the ends of Python's calendar that any time zone's offset keeps them in it.
EARLIEST_SINCE, LATEST_SINCE = date(1, 1, 2), date(9999, 12, 30)
LONGEST_SINCE_SPAN = 36_500 * 86_400  # 100 years back
SINCE_ACCEPTS = (f"a date or time from {EARLIEST_SINCE} to {LATEST_SINCE} (2026-11-24, 2026-11-24T08:00) "
                 f"or a span back of at most {LONGEST_SINCE_SPAN // 86_400}d (6h, 2d)")


def since_moment(text: str | None) -> datetime:
    """--since as a moment: an ISO date or time (local when it names no
    zone), or a span back from now (6h, 2d); the beginning of time when absent."""
    if text is None:
        return datetime(1970, 1, 1, tzinfo=timezone.utc)
    from schemas.watch import span_seconds
    try:
        seconds = span_seconds(text)
    except ValueError:
        return _since_date(text)
    if seconds > LONGEST_SINCE_SPAN:  # also what timedelta could not hold
        raise UserError(f"--since {text!r} is out of range: it takes {SINCE_ACCEPTS}")
    return datetime.now(timezone.utc) - timedelta(seconds=seconds)


def _since_date(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"--since {text!r} is neither a date or time (2026-11-24, 2026-11-24T08:00) "
                        "nor a span back (6h, 2d)") from None
    out_of_range = UserError(f"--since {text!r} is out of range: it takes {SINCE_ACCEPTS}")
    if not EARLIEST_SINCE <= moment.date() <= LATEST_SINCE:
        raise out_of_range
    try:  # local time when it names no zone; in UTC it may still pass an end of the calendar
        return (moment if moment.tzinfo else moment.astimezone()).astimezone(timezone.utc)
    except (ValueError, OverflowError):
        raise out_of_range from None
