"""Loads the statements kept in sql/*.sql."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def sql(name: str) -> str:
    return (files("sql") / f"{name}.sql").read_text(encoding="utf-8")


def sql_group(prefix: str) -> list[str]:
    """Every sql/<prefix>*.sql, in name order (schema_*, views_*)."""
    names = sorted(p.name for p in files("sql").iterdir() if p.name.startswith(prefix) and p.name.endswith(".sql"))
    return [sql(name[:-4]) for name in names]
