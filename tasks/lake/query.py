"""Read-only SQL for analysts: run a query (tasks/lake/result_text.py renders its rows)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from tasks.lake.catalog import Catalog
from tasks.lake.definitions import own_definitions
from tasks.lake.result_text import QueryResult
from tasks.lake.sql_guard import NotReadOnly, check_query, check_view_definitions, lists_tables, readable_tables
from tasks.lake.sqlfiles import sql
from schemas.errors import UserError
from tasks.common.redaction import known_secrets, register_environment, without_known_secrets

__all__ = ["NoSuchTask", "NotConsolidated", "NotReadOnly", "QueryResult", "QueryTimedOut", "QueryTooLarge",
           "ResultTooLarge", "latest_task", "require_bundles", "run_analyst_query", "run_query", "task_list",
           "task_top_sources", "top_sources"]


def run_analyst_query(catalog: Catalog, query: str, timeout: float | None = None) -> QueryResult:
    """Run analysts' SQL in a confined session (open_catalog(confined=True)):
    SELECT queries (with DESCRIBE, SUMMARIZE, SHOW TABLES and EXPLAIN of a
    query) that name only the lake's views and plain functions (see
    sql_guard), over one snapshot whose views and macros are searchlake's
    own (definitions.py), stopped after `timeout` seconds so that no query
    holds the catalog for ever, and refused when its result passes the row
    or size cap (ResultTooLarge) or its memory (QueryTooLarge)."""
    statements = catalog.con.extract_statements(query)
    if not statements:
        raise NotReadOnly("the SQL is empty")
    for statement in statements:
        explained = statement.type == duckdb.StatementType.EXPLAIN
        check_query(catalog.con, _explained_text(statement.query) if explained else statement.query)
    result = QueryResult([], [])
    with _interrupted_after(catalog, timeout or catalog.settings.sql_timeout) as limit:
        try:
            catalog.con.begin()  # one snapshot: the definitions checked are the ones the query reads
            try:
                _check_catalog_definitions(catalog)
                for statement in statements:
                    result = _capped(catalog, statement.query)
                    if statement.type != duckdb.StatementType.EXPLAIN and lists_tables(catalog.con, statement.query):
                        result = _readable_only(result)
            finally:
                catalog.con.rollback()
        except duckdb.PermissionException as exc:
            raise NotReadOnly(f"searchlake sql only reads the lake's views: {_first_line(exc)}") from None
        except duckdb.InterruptException:
            raise QueryTimedOut(f"the query ran longer than {limit:g} s and was stopped "
                                "(SEARCHLAKE_SQL_TIMEOUT sets the limit)") from None
        except (duckdb.OutOfMemoryException, MemoryError):
            raise QueryTooLarge(f"the query needs more memory than {catalog.settings.sql_memory_mb} MB "
                                "(SEARCHLAKE_SQL_MEMORY_MB sets the limit)") from None
    return result


def _readable_only(listed: QueryResult) -> QueryResult:
    """SHOW TABLES as analysts may read it: the lake's views and documented tables."""
    readable = readable_tables()
    return QueryResult(listed.columns, [row for row in listed.rows if str(row[0]).lower() in readable], listed.types)


def _check_catalog_definitions(catalog: Catalog) -> None:
    """The catalog's current views and macros are searchlake's own, and the
    earlier views time travel may read compute only on the lake (a view of
    any time calls the macros of the current one)."""
    catalog.require_own_definitions()
    # a definition that is one of searchlake's own views, word for word, is its own code
    ours = own_definitions()
    check_view_definitions(catalog.con, [(view, query) for view, query in
                                         catalog.con.execute(sql("sandbox_view_definitions")).fetchall()
                                         if ours.get(("view", view)) != query])


FETCH_ROWS = 2048


def _capped(catalog: Catalog, query: str) -> QueryResult:
    """The rows of `query`, fetched a chunk at a time up to the caps
    (sql_max_rows, sql_max_mb), with any secret searchlake knows masked
    (its settings' and the environment's: redaction.register_environment)."""
    cursor = catalog.con.execute(query)
    if cursor.description is None:
        return QueryResult([], [])
    register_environment()
    most_rows, most_bytes = catalog.settings.sql_max_rows, int(catalog.settings.sql_max_mb * 1024 * 1024)
    rows: list[tuple] = []
    size = 0
    while chunk := cursor.fetchmany(FETCH_ROWS):
        rows.extend(tuple(_masked(value) for value in row) for row in chunk)
        size += sum(_size(value) for row in chunk for value in row)
        if len(rows) > most_rows:
            raise ResultTooLarge(f"the result has more than {most_rows:,} rows (SEARCHLAKE_SQL_MAX_ROWS): add a "
                                 "LIMIT or an aggregate, or read the lake's Parquet exports (docs/lake.md)")
        if size > most_bytes:
            raise ResultTooLarge(f"the result holds more than {catalog.settings.sql_max_mb:g} MB "
                                 "(SEARCHLAKE_SQL_MAX_MB): select fewer or shorter columns, or add a LIMIT")
    return QueryResult([d[0] for d in cursor.description], rows, [d[1] for d in cursor.description])


def _size(value) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple, dict)):
        return len(str(value))
    return 8


def _masked(value):
    """A cell without any secret searchlake was configured with: the
    engine's metadata holds none, and a value an analyst reads must not
    either, whatever wrote it into the lake."""
    if isinstance(value, str):
        return without_known_secrets(value)
    if isinstance(value, (list, tuple, dict)) and any(s in str(value) for s in known_secrets()):
        return json.loads(without_known_secrets(json.dumps(value, default=str)))
    return value


class QueryTimedOut(UserError, RuntimeError):
    """An analyst's query ran past its time limit."""


class ResultTooLarge(UserError, ValueError):
    """An analyst's query returned more rows or text than the caps allow."""


class QueryTooLarge(UserError, MemoryError):
    """An analyst's query needed more memory than the session may use."""


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
    return QueryResult([d[0] for d in cursor.description], cursor.fetchall(), [d[1] for d in cursor.description])


def top_sources(catalog: Catalog, task_id: str, limit: int) -> QueryResult:
    return run_query(catalog, sql("top_sources"), [task_id, limit])


def task_top_sources(catalog: Catalog, task_id: str, limit: int) -> QueryResult:
    """A task's top consolidated sources, or one line saying why there are
    none: no bundle of the task (NoSuchTask), or none consolidated yet."""
    require_bundles(catalog, task_id)
    result = top_sources(catalog, task_id, limit)
    if not result.rows:
        raise NotConsolidated(f"task {task_id!r} has no consolidated sources yet: "
                              f"run searchlake consolidate --task-id {task_id}")
    return result


class NotConsolidated(UserError, LookupError):
    """A task's bundles landed, but none has been consolidated yet."""


class NoSuchTask(UserError, LookupError):
    """The lake holds no bundle of the task asked for."""


def require_bundles(catalog: Catalog, task_id: str) -> None:
    """NoSuchTask when the lake holds no bundle of `task_id`: an empty answer
    would hide a mistyped task id."""
    if task_id not in {row[0] for row in catalog.rows("known_tasks")}:
        raise NoSuchTask(f"task {task_id!r} has no bundles in the lake (see: searchlake sql "
                         f"\"select distinct task_id from bundles\")")


def task_list(catalog: Catalog, limit: int) -> QueryResult:
    return run_query(catalog, sql("task_list"), [limit])


def latest_task(catalog: Catalog) -> str | None:
    """The task `searchlake tasks` lists first; None when the lake holds none."""
    found = task_list(catalog, 1).rows
    return found[0][0] if found else None
