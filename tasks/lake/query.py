"""Read-only SQL for analysts: run a query and render its rows."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal

import duckdb

from tasks.lake.catalog import Catalog
from tasks.lake.sql_guard import NotReadOnly, check_query, check_view_definitions, lists_tables, readable_tables
from tasks.lake.sqlfiles import sql
from tasks.common.errors import UserError
from tasks.common.redaction import known_secrets, register_environment, without_known_secrets

__all__ = ["NoSuchTask", "NotConsolidated", "NotReadOnly", "QueryResult", "QueryTimedOut", "QueryTooLarge",
           "ResultTooLarge", "ValueTooDeep", "json_records", "json_rows", "latest_task", "require_bundles",
           "run_analyst_query", "run_query", "task_list", "task_top_sources", "text_rows", "to_csv", "to_json",
           "top_sources"]


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]
    # DuckDB's type of each column: what tells a JSON column from text, also
    # inside lists and structs.
    types: list = field(default_factory=list)


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
    check_view_definitions(catalog.con, catalog.con.execute(sql("sandbox_view_definitions")).fetchall())


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


# -- query results as text and JSON ----------------------------------------------

class ValueTooDeep(UserError, ValueError):
    """A value nests deeper than it can be written out."""


TOO_DEEP = "a value nests too deeply to write out; select its parts"


def text_rows(result: QueryResult, *, to_the_second: bool = False) -> list[list[str | None]]:
    """Every cell as one text: JSON columns as their JSON text, lists,
    structs and maps as JSON, timestamps in ISO 8601 (to the second, with a
    space for the T, when `to_the_second`: what a person reads), NULL as None."""
    types = _types(result)
    return [[_short_time(value) if to_the_second and isinstance(value, datetime) else _text(value, dtype)
             for value, dtype in zip(row, types)] for row in result.rows]


def _short_time(value: datetime) -> str:
    return value.isoformat(sep=" ", timespec="seconds")


def to_csv(result: QueryResult) -> str:
    """The rows as CSV, text cells a spreadsheet would run as a formula made
    inert (see inert_cell)."""
    types = _types(result)
    rows = ([inert_cell(cell) if isinstance(value, str) and not _is_json(dtype) else cell
             for value, cell, dtype in zip(row, cells, types)]
            for row, cells in zip(result.rows, text_rows(result)))
    return "".join(_csv_lines([[inert_cell(name) for name in result.columns], *rows]))


def _csv_lines(rows) -> Iterator[str]:
    """Each row as a CSV line ending in "\n". The csv module quotes a cell
    holding a character of its line terminator, so rows are written ended
    with "\r\n" and given "\n" instead: a cell holding a carriage return is
    quoted, and read back as one cell (with "\n" alone it was not)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    for row in rows:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(row)
        yield buffer.getvalue()[:-2] + "\n"


# A spreadsheet opening a CSV file runs a cell that starts with one of these
# as a formula (=HYPERLINK(...), +cmd|...): OWASP's CSV injection rule.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def inert_cell(text: str | None) -> str | None:
    """A text cell as a spreadsheet may open it: one starting like a formula
    gets a single quote before it (which spreadsheets show as text). A cell
    that is only a number (-5, +1.5e3) is left as it is, and so is every
    cell of a number column: only text is quoted."""
    if text and text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def to_json(result: QueryResult) -> str:
    """The rows as an array of objects, JSON values embedded as JSON."""
    return _dumps(json_records(result), indent=2)


def json_records(result: QueryResult) -> list[dict]:
    """The rows as objects keyed by column (a repeated name made unique),
    each value as JSON has it (see _plain)."""
    names = _unique(result.columns)
    return [dict(zip(names, row)) for row in json_rows(result)]


def json_rows(result: QueryResult) -> list[list]:
    """The rows as lists of JSON values: JSON columns parsed, lists and
    structs as arrays and objects, timestamps as ISO 8601, NaN as null."""
    types = _types(result)
    return [[_plain(v, t) for v, t in zip(row, types)] for row in result.rows]


def _unique(names: list[str]) -> list[str]:
    """Column names as object keys: a repeated name (select 1 a, 2 a) gets
    _1, _2, ... as DuckDB names it in a subquery, rather than hiding a column."""
    taken: set[str] = set()
    unique = []
    for name in names:
        candidate, n = name, 0
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        taken.add(candidate)
        unique.append(candidate)
    return unique


def _types(result: QueryResult) -> list:
    return list(result.types) or [None] * len(result.columns)


def _text(value, dtype) -> str | None:
    if value is None:
        return None
    if _is_json(dtype) and isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return _dumps(_plain(value, dtype))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (float, Decimal)):
        return str(value)  # exact decimals; nan and inf as DuckDB writes them
    return str(_plain_scalar(value))


def _plain(value, dtype=None):
    """`value` as JSON has it: a JSON column's value parsed (kept as a string
    when it does not parse), lists as arrays, structs and maps as objects,
    timestamps as ISO 8601 strings, NaN and infinities as null (JSON has no
    number for them)."""
    if value is None:
        return None
    if _is_json(dtype) and isinstance(value, str):
        return _parsed_json(value)
    try:
        if isinstance(value, dict):
            return {_key_text(k): _plain(v, _member_type(dtype, k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [_plain(v, _member_type(dtype)) for v in value]
    except RecursionError:
        raise ValueTooDeep(TOO_DEEP) from None
    return _plain_scalar(value)


def _plain_scalar(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return _blob_text(value)
    if isinstance(value, (bool, int, str)):
        return value
    return str(value)  # UUID, INTERVAL (timedelta), ...


def _is_json(dtype) -> bool:
    return dtype is not None and str(dtype) == "JSON"


def _member_type(dtype, key=None):
    """The type of a nested value's members: a list's element, a struct's
    field `key`, a map's value; None when unknown (a union's member)."""
    kind = getattr(dtype, "id", None)
    if kind in ("list", "array"):
        return dtype.children[0][1]
    if kind == "struct":
        return dict(dtype.children).get(key)
    if kind == "map":
        return dtype.children[1][1]
    return None


def _parsed_json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text  # not JSON after all: shown as the text it is
    except RecursionError:
        raise ValueTooDeep(TOO_DEEP) from None


def _key_text(key) -> str:
    """An object key for a map key of any type."""
    plain = _plain(key)
    return plain if isinstance(plain, str) else _dumps(plain)


def _blob_text(value: bytes) -> str:
    """A BLOB as DuckDB writes one: printable ASCII as is, other bytes as \\xNN."""
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in value)


def _dumps(value, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    except RecursionError:
        raise ValueTooDeep(TOO_DEEP) from None
