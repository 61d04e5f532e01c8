"""Loads the statements kept in sql/*.sql."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def sql(name: str) -> str:
    return (files("sql") / f"{name}.sql").read_text(encoding="utf-8")
