"""Loads the statements kept in sql/*.sql."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any


@cache
def sql(name: str) -> str:
    return (files("sql") / f"{name}.sql").read_text(encoding="utf-8")


def sql_group(prefix: str) -> list[str]:
    """Every sql/<prefix>*.sql, in name order (schema_*, views_*)."""
    names = sorted(p.name for p in files("sql").iterdir() if p.name.startswith(prefix) and p.name.endswith(".sql"))
    return [sql(name[:-4]) for name in names]


def records(result: Any) -> list[dict[str, Any]]:
    """The rows of an executed statement as dicts keyed by column name, so
    callers read `row["needs_rebuild"]`, not `row[4]`."""
    names = [column[0] for column in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]
