"""The lake's history: every commit is a DuckLake snapshot that says who made
it (author), what it did (commit message) and which tasks it concerns (extra
info; see Catalog.describe_commit). Read newest first, with the tables each
one changed named rather than numbered."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tasks.lake.catalog import Catalog

# DuckLake's kinds of change, in the words and order a reader looks for.
CHANGE_VERBS = {
    "schemas_created": "created", "tables_created": "created", "views_created": "created",
    "tables_inserted_into": "inserted into", "inlined_insert": "inserted into",
    "tables_deleted_from": "deleted from", "inlined_delete": "deleted from",
    "tables_altered": "altered", "views_altered": "altered",
    "schemas_dropped": "dropped", "tables_dropped": "dropped", "views_dropped": "dropped",
    "flushed_inlined": "compacted", "merge_adjacent": "compacted", "compacted_table": "compacted",
}
VERB_ORDER = ("created", "inserted into", "deleted from", "altered", "dropped", "compacted")


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    time: datetime
    author: str | None
    message: str | None
    changes: dict[str, list[str]]  # verb -> table and view names


def lake_history(catalog: Catalog, task_id: str | None = None, limit: int = 20) -> list[Snapshot]:
    """The latest `limit` snapshots, newest first; with `task_id`, those
    whose commit says it concerns that task."""
    names = {table_id: name for table_id, name in catalog.rows("history_names")}
    return [Snapshot(snapshot_id, time, author, message, named_changes(changes, names))
            for snapshot_id, time, author, message, changes in catalog.rows("history_snapshots", [task_id, limit])]


def task_is_known(catalog: Catalog, task_id: str) -> bool:
    return bool(catalog.rows("history_task_known", [task_id])[0][0])


def named_changes(changes: dict[str, list[str]], names: dict[int, str]) -> dict[str, list[str]]:
    """snapshots()'s changes ({"inlined_insert": ["12"], "tables_created":
    ["main.results"]}) as verbs and names: {"inserted into": ["bundle_catalog"]}."""
    grouped: dict[str, list[str]] = {}
    for kind, values in changes.items():
        verb = CHANGE_VERBS.get(kind, kind.replace("_", " "))
        for value in values:
            name = _name(value, names)
            if name not in grouped.setdefault(verb, []):
                grouped[verb].append(name)
    order = {verb: place for place, verb in enumerate(VERB_ORDER)}
    return dict(sorted(grouped.items(), key=lambda item: order.get(item[0], len(order))))


def _name(value: str, names: dict[int, str]) -> str:
    """A table or view id, or a created one's qualified name ('main."plans"')."""
    if value.isdigit():
        return names.get(int(value), f"table #{value}")
    return value.split(".", 1)[-1].strip('"')
