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


_READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


def run_analyst_query(catalog: Catalog, query: str) -> QueryResult:
    """Run analysts' SQL: queries only (SELECT, WITH, FROM, DESCRIBE, SHOW,
    SUMMARIZE, EXPLAIN), never statements that change or write anything."""
    statements = catalog.con.extract_statements(query)
    if not statements:
        raise NotReadOnly("the SQL is empty")
    for statement in statements:
        if statement.type not in _READ_ONLY:
            kind = str(statement.type).rsplit(".", 1)[-1]
            raise NotReadOnly(f"searchlake sql only reads; {kind} statements are not allowed")
    result = QueryResult([], [])
    for statement in statements:
        result = run_query(catalog, statement.query)
    return result


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
