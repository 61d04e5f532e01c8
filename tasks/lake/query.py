"""Read-only SQL for analysts: run a query and render its rows."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import duckdb

from tasks.lake.catalog import Catalog
from tasks.lake.sqlfiles import sql


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]


class NotReadOnly(ValueError):
    """Analysts' SQL may only read."""


_QUERY = duckdb.StatementType.SELECT
_EXPLAIN = duckdb.StatementType.EXPLAIN


def run_analyst_query(catalog: Catalog, query: str) -> QueryResult:
    """Run analysts' SQL in a confined session (open_catalog(confined=True)):
    queries only (SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, and EXPLAIN
    of a query), never statements that change or write anything.

    The engine is the guard for files: a confined session opens nothing but
    the catalog and the lake files of the views. It still lets a COPY write
    over the files it may read, so statements are checked by DuckDB's own
    parser too, including the statement an EXPLAIN ANALYZE would run."""
    statements = catalog.con.extract_statements(query)
    if not statements:
        raise NotReadOnly("the SQL is empty")
    for statement in statements:
        _check_reads_only(catalog, statement)
    result = QueryResult([], [])
    for statement in statements:
        try:
            result = run_query(catalog, statement.query)
        except duckdb.PermissionException as exc:
            raise NotReadOnly(f"searchlake sql only reads the lake's views: {_first_line(exc)}") from None
    return result


def _check_reads_only(catalog: Catalog, statement) -> None:
    kind = statement.type
    if kind == _EXPLAIN:
        explained = catalog.con.extract_statements(_explained_text(statement.query))
        kind = explained[0].type if len(explained) == 1 else _EXPLAIN
    if kind != _QUERY:
        name = str(kind).rsplit(".", 1)[-1]
        raise NotReadOnly(f"searchlake sql only reads; {name} statements are not allowed")


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
