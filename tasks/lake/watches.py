"""Watches in the lake: the `watches` rows, the rounds of each topic, what
each round found (kept per round: `consolidated` holds only a topic's latest
round, and `searchlake compact` expires the snapshots time travel would
need), and the `changes` computed from one round to the next (sql/watch_*.sql)."""

from __future__ import annotations

import json
from datetime import datetime

from schemas.watch import Change, Watch, WatchParams
from schemas.errors import UserError
from tasks.common.text import counted
from tasks.lake.catalog import Catalog


class UnknownWatch(UserError, LookupError):
    """No watch of that name (or it was removed)."""


class WatchExists(UserError, ValueError):
    """A watch of that name is already there."""


def check_name_free(catalog: Catalog, name: str) -> None:
    if catalog.rows("watch_get", [name]):
        raise WatchExists(f"a watch named {name!r} exists already (searchlake watch list shows it)")


def add_watch(catalog: Catalog, watch: Watch, deployment_id: str | None) -> None:
    def add(cat: Catalog) -> None:
        check_name_free(cat, watch.name)
        cat.run("watch_insert", [watch.name, watch.question, watch.topic, watch.interval_seconds,
                                 watch.params.model_dump_json(exclude_none=True), deployment_id])

    catalog.transaction(add, action="watch add", detail=watch.name, task_id=watch.topic)


def get_watch(catalog: Catalog, name: str) -> Watch:
    rows = catalog.rows("watch_get", [name])
    if not rows:
        raise UnknownWatch(f"no watch named {name!r} (searchlake watch list shows them)")
    return _watch(rows[0])


def _watch(row: tuple) -> Watch:
    name, question, _task_id, interval, params = row[:5]
    return Watch(name=name, question=question, interval_seconds=interval,
                 params=WatchParams.model_validate(json.loads(params) if isinstance(params, str) else params))


def list_watches(catalog: Catalog) -> list[tuple[Watch, int, datetime | None]]:
    """Every watch not removed, with its number of rounds and when the latest started."""
    return [(_watch(row), row[7], row[8]) for row in catalog.rows("watch_list")]


def remove_watch(catalog: Catalog, name: str) -> Watch:
    """The watch goes from the list; its rounds and changes stay in the lake."""
    def remove(cat: Catalog) -> Watch:
        watch = get_watch(cat, name)
        cat.run("watch_remove", [name])
        return watch

    return catalog.transaction(remove, action="watch remove", detail=name)


def begin_round(catalog: Catalog, watch: Watch, run_id: str | None) -> int:
    """Record that the topic's next round starts, and start its consolidated
    output afresh: the consolidation cursor moves past every bundle earlier
    rounds landed, so the round's ranking holds the round's sources only
    (the earlier rounds' bundles stay in `bundles` and `results`)."""
    topic = watch.topic

    def begin(cat: Catalog) -> int:
        number = cat.rows("watch_round_next", [topic])[0][0]
        cat.run("watch_round_start", [topic, watch.name, number, run_id])
        high_water, bundle_count = cat.rows("task_landing_state", [topic])[0]
        if bundle_count:
            cat.run("consolidate_token")  # a consolidation committing meanwhile conflicts, and runs again
            cat.run("watch_consolidated_clear", [topic])
            cat.run("cursor_delete", [topic])
            cat.run("cursor_put", {"task_id": topic, "last_query_id": None, "last_source_id": None,
                                 "consumed_count": 0, "last_snapshot": high_water, "output_rows": 0})
        cat.describe_commit("watch round", f"round {number} of {watch.name} starts", task_id=topic)
        return number

    return catalog.transaction(begin, action="watch round", task_id=topic)


def end_round(catalog: Catalog, topic: str, number: int,
              answer_rows: list[list]) -> tuple[int | None, list[Change]]:
    """Keep what the round found (its consolidated sources, its report's
    answer: `answer_rows` of section, item_index, insight, source_id, url,
    title, quote, verified), record what changed since the topic's previous
    complete round, and mark the round complete, in one commit. The number
    of the round compared with (None for a first round: no changes) and the
    round's changes."""
    def end(cat: Catalog) -> tuple[int | None, list[Change]]:
        cat.run("watch_round_sources_insert", [number, topic])
        for row in answer_rows:
            cat.run("watch_round_answer_insert", [topic, number, *row])
        previous = cat.rows("watch_round_previous", [topic, number])[0][0]
        if previous is not None:
            cat.set_variables(task_id=topic, round=number, previous=previous)
            cat.run("watch_changes_insert")
        cat.run("watch_round_finish", ["complete", None, topic, number])
        changes = round_changes(cat, topic, number)
        cat.describe_commit("watch round", f"round {number} complete, {counted(len(changes), 'change')}",
                            task_id=topic)
        return previous, changes

    return catalog.transaction(end, action="watch round", task_id=topic)


def fail_round(catalog: Catalog, topic: str, number: int, error: str) -> None:
    catalog.transaction(lambda cat: cat.run("watch_round_finish", ["failed", error, topic, number]),
                        action="watch round", detail=f"round {number} failed", task_id=topic)


def topic_known(catalog: Catalog, name: str, topic: str) -> bool:
    """A watch of that name, or a topic with rounds (a removed watch's stay)."""
    return bool(catalog.rows("watch_get", [name])) or any(
        catalog.rows("watch_round_next", [t])[0][0] > 1 for t in (topic, name))


def round_changes(catalog: Catalog, topic: str, number: int) -> list[Change]:
    return [Change(*row) for row in catalog.rows("watch_round_changes", [topic, number])]


def topic_changes(catalog: Catalog, topic: str, since: datetime) -> list[tuple[int, datetime, Change]]:
    """The topic's changes recorded at or after `since`: (round, at, change), round by round."""
    return [(row[0], row[1], Change(*row[2:])) for row in catalog.rows("watch_changes", [topic, since])]


def round_counts(catalog: Catalog, topic: str, number: int) -> tuple[int, int]:
    """How many sources the round found, and how many insights its report holds."""
    return tuple(catalog.rows("watch_round_counts", [topic, number, topic, number])[0])
