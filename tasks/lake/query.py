"""Read-only SQL for analysts: run a query and render its rows."""

from __future__ import annotations

import csv
import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import duckdb

from tasks.lake.catalog import Catalog
from tasks.lake.sql_guard import NotReadOnly, check_query, check_view_definitions, readable_tables
from tasks.lake.sqlfiles import sql

__all__ = ["NotReadOnly", "QueryResult", "QueryTimedOut", "run_analyst_query", "run_query", "to_csv", "to_json",
           "top_sources"]


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]


def run_analyst_query(catalog: Catalog, query: str, timeout: float | None = None) -> QueryResult:
    """Run analysts' SQL in a confined session (open_catalog(confined=True)):
    SELECT queries (with DESCRIBE, SUMMARIZE, SHOW TABLES and EXPLAIN of a
    query) that name only the lake's views and plain functions (see
    sql_guard), stopped after `timeout` seconds so that no query holds the
    catalog for ever."""
    statements = catalog.con.extract_statements(query)
    if not statements:
        raise NotReadOnly("the SQL is empty")
    check_view_definitions(catalog.con, catalog.rows("sandbox_view_definitions", [sorted(readable_tables())]))
    for statement in statements:
        explained = statement.type == duckdb.StatementType.EXPLAIN
        check_query(catalog.con, _explained_text(statement.query) if explained else statement.query)
    result = QueryResult([], [])
    with _interrupted_after(catalog, timeout or catalog.settings.sql_timeout) as limit:
        for statement in statements:
            try:
                result = run_query(catalog, statement.query)
            except duckdb.PermissionException as exc:
                raise NotReadOnly(f"searchlake sql only reads the lake's views: {_first_line(exc)}") from None
            except duckdb.InterruptException:
                raise QueryTimedOut(f"the query ran longer than {limit:g} s and was stopped "
                                    "(SEARCHLAKE_SQL_TIMEOUT sets the limit)") from None
    return result


class QueryTimedOut(RuntimeError):
    """An analyst's query ran past its time limit."""


@contextmanager
def _interrupted_after(catalog: Catalog, seconds: float) -> Iterator[float]:
    timer = threading.Timer(seconds, catalog.con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        yield seconds
    finally:
        timer.cancel()


def _explained_text(explain: str) -> str:
    """The statement an EXPLAIN statement explains: what follows EXPLAIN and
    its ANALYZE keyword or (option, ...) list, found with DuckDB's tokenizer
    (which skips comments)."""
    starts = [start for start, _ in duckdb.tokenize(explain)]
    at = 1  # starts[0] is EXPLAIN
    if at < len(starts) and explain[starts[at]:starts[at] + 7].lower() in ("analyze", "analyse"):
        at += 1
    elif at < len(starts) and explain[starts[at]] == "(":
        depth = 0
        while at < len(starts):
            depth += {"(": 1, ")": -1}.get(explain[starts[at]], 0)
            at += 1
            if depth == 0:
                break
    return explain[starts[at]:] if at < len(starts) else ""


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def run_query(catalog: Catalog, query: str, params: list | None = None) -> QueryResult:
    cursor = catalog.con.execute(query, params or [])
    if cursor.description is None:
        return QueryResult([], [])
    return QueryResult([d[0] for d in cursor.description], cursor.fetchall())


def top_sources(catalog: Catalog, task_id: str, limit: int) -> QueryResult:
    return run_query(catalog, sql("top_sources"), [task_id, limit])


def _plain(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def to_csv(result: QueryResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows([[_plain(v) for v in row] for row in result.rows])
    return out.getvalue()


def to_json(result: QueryResult) -> str:
    records = [{c: _plain(v) for c, v in zip(result.columns, row)} for row in result.rows]
    return json.dumps(records, ensure_ascii=False, indent=2, default=str)
