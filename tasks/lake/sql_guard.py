"""What analysts' SQL may name: an allow-list, checked on DuckDB's own parse.

A query is parsed by the engine (`json_serialize_sql`, which accepts only
SELECT statements) and every table, table function and function it names is
looked up in what analysts may use:

- tables: the documented views and tables of the lake (plus the query's own
  CTEs), in the lake's catalog only;
- table functions: a handful that make rows from values (range, unnest, …)
  and the lake's snapshot list for time travel;
- functions: the scalar and aggregate functions of a bare DuckDB with no
  extension loaded, less those that read the engine's own state, and the
  lake's own macros that compute on values (url_domain).

So nothing of an extension (the PostgreSQL client's `postgres_query`,
DuckLake's internals) and nothing that shows settings, databases or secrets
(`duckdb_settings()`, `duckdb_databases()`, `current_setting()`) can be
named, whatever the catalog's connection string or the lake's credentials
hold: the engine behind the session needs them, the analyst never sees them.

The views are the catalog's, and a shared catalog has other writers: its
current views and macros must be searchlake's own (tasks/lake/definitions.py),
and every earlier view time travel may read is checked the same way as a
query (check_view_definitions), reading only the lake's own tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache

import duckdb

from tasks.lake.sqlfiles import sql_group
from schemas.errors import UserError


class NotReadOnly(UserError, ValueError):
    """Analysts' SQL may only read the lake's views."""


# the tables the manual documents beside the views (docs/sql.md, batch.md, watch.md)
LAKE_TABLES = ("results", "consolidated", "search_policy", "batch_questions", "watch_round_sources",
               "watch_round_answers")
TABLE_FUNCTIONS = {"range", "generate_series", "unnest", "json_each", "json_tree", "snapshots"}
# The lake's own macros, which compute on values (sql/schema_00_lake.sql).
LAKE_FUNCTIONS = frozenset({"url_domain"})
LAKE_NAMES = ("", "lake", "main")  # a view may be named bare, or as lake.main.<view>
# Functions of a bare engine that tell about the engine rather than compute
# on values: its settings, variables, session and logs.
ENGINE_STATE_FUNCTIONS = {
    "current_setting", "getvariable", "write_log", "parse_duckdb_log_message", "current_connection_id",
    "current_transaction_id", "current_query_id", "txid_current", "in_search_path",
}
# Describing a view or summarizing a query is reading; other SHOW forms list
# the engine's databases, settings and the like.
SHOW_FORMS = {"DESCRIBE", "SUMMARY"}
_VIEW_NAME = re.compile(r"(?i)\bVIEW\s+(\w+)\s+AS\b")
_TABLE_NAME = re.compile(r"(?i)\bCREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)")


def check_query(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Raise NotReadOnly unless `query` (one statement) is a SELECT that names
    only what analysts may read."""
    tree = _parsed(con, query)
    if len(tree.get("statements", [])) != 1:  # e.g. a statement DuckDB expands into several (PIVOT)
        raise NotReadOnly("searchlake sql only reads; only SELECT queries are allowed")
    _check_tree(tree, readable_tables())


def check_view_definitions(con: duckdb.DuckDBPyConnection, definitions: list[tuple[str, str]]) -> None:
    """Raise NotReadOnly unless every (view name, query) reads only the
    lake's tables and views with the functions analysts may use: the view
    runs inside an analyst's query, where check_query sees only its name.
    (The catalog's current views and macros are searchlake's own, checked
    by definitions.py; these are the earlier ones time travel may read.)"""
    for view, query in definitions:
        if (view, query) in _safe_views:
            continue
        try:
            _check_tree(_parsed(con, query), lake_tables() | readable_tables())
        except NotReadOnly as exc:
            raise NotReadOnly(f"the catalog's view {view} is not searchlake's: {exc}") from None
        _safe_views.add((view, query))


# Definitions found safe: the check depends on their text alone.
_safe_views: set[tuple[str, str]] = set()


def lists_tables(con: duckdb.DuckDBPyConnection, query: str) -> bool:
    """Whether `query` is SHOW TABLES itself, whose rows are to be the names
    analysts may read (the catalog holds searchlake's internal tables too)."""
    statements = _parsed(con, query).get("statements") or [{}]
    node = statements[0].get("node") or {}
    source = node.get("from_table") or {}
    return (node.get("type") == "SELECT_NODE" and source.get("type") == "SHOW_REF"
            and source.get("show_type") == "SHOW_UNQUALIFIED" and not node.get("where_clause"))


def _check_tree(tree: dict, tables: frozenset[str]) -> None:
    for node, ctes in _scoped_nodes(tree):
        _check_node(node, ctes, tables)


def _parsed(con: duckdb.DuckDBPyConnection, query: str) -> dict:
    try:
        answer = json.loads(con.execute("SELECT json_serialize_sql(?)", [query]).fetchone()[0])
    except duckdb.Error as exc:  # e.g. the SQL does not parse
        raise NotReadOnly(f"searchlake sql only reads: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise NotReadOnly("searchlake sql only reads queries it can check: this one nests too deeply") from None
    if answer.get("error"):
        message = answer.get("error_message", "")
        if "Only SELECT" in message:
            raise NotReadOnly("searchlake sql only reads; only SELECT queries are allowed")
        raise NotReadOnly(f"searchlake sql only reads: {message.splitlines()[0] if message else 'unparsable SQL'}")
    return answer


def _scoped_nodes(tree: dict) -> Iterator[tuple[dict, frozenset[str]]]:
    """Every JSON object of the parse tree with the CTE names in scope where
    it stands (walked without recursion: a query may nest as deep as DuckDB
    allows). A query's CTEs cover that query and the subqueries inside it,
    nothing outside; a CTE's own definition sees the CTEs before it, and
    itself only when it is recursive. Where the scope is in doubt a name is
    taken for a table, which the allow-list then has to admit."""
    stack: list[tuple[object, frozenset[str]]] = [(tree, frozenset())]
    while stack:
        item, scope = stack.pop()
        if isinstance(item, list):
            stack.extend((value, scope) for value in item)
            continue
        if not isinstance(item, dict):
            continue
        if item.get("type") == "RECURSIVE_CTE_NODE" and isinstance(item.get("cte_name"), str):
            scope = scope | {item["cte_name"].lower()}
        entries = [e for e in (item.get("cte_map") or {}).get("map", []) if isinstance(e, dict) and "key" in e]
        names = [str(entry["key"]).lower() for entry in entries]
        for position, entry in enumerate(entries):
            stack.append((entry.get("value"), scope | frozenset(names[:position])))
        scope = scope | frozenset(names)
        yield item, scope
        stack.extend((value, scope) for key, value in item.items() if key != "cte_map")


def _check_node(node: dict, ctes: frozenset[str], tables: frozenset[str]) -> None:
    kind = node.get("type")
    if kind == "BASE_TABLE":
        _check_table(node, ctes, tables)
    elif kind == "SHOW_REF":
        _check_show(node)
    elif kind == "TABLE_FUNCTION":
        name = _function_name(node.get("function") or {})
        if name not in TABLE_FUNCTIONS:
            raise NotReadOnly(f"searchlake sql only reads the lake's views; the table function {name}() is not allowed")
    elif node.get("class") == "FUNCTION" and not node.get("is_operator"):
        _check_function(node)


def _check_table(node: dict, ctes: frozenset[str], tables: frozenset[str]) -> None:
    name = node.get("table_name", "").lower()
    qualified = node.get("catalog_name") or node.get("schema_name")
    if not qualified and name in ctes:
        return
    if name in tables and node.get("catalog_name", "").lower() in LAKE_NAMES \
            and node.get("schema_name", "").lower() in LAKE_NAMES:
        return
    shown = ".".join(p for p in (node.get("catalog_name"), node.get("schema_name"), node.get("table_name")) if p)
    raise NotReadOnly(f"searchlake sql only reads the lake's views; {shown!r} is not one of them "
                      f"(see: searchlake sql \"show tables\")")


def _check_show(node: dict) -> None:
    show = node.get("show_type")
    if show in SHOW_FORMS or (show == "SHOW_UNQUALIFIED" and node.get("table_name", "").strip('"') == "tables"):
        return
    raise NotReadOnly("searchlake sql only reads the lake's views; SHOW lists only tables (show tables)")


def _check_function(node: dict) -> None:
    name = _function_name(node)
    if name in TABLE_FUNCTIONS and node.get("schema", "") in ("", "lake"):
        return  # the function node inside a TABLE_FUNCTION reference, checked there
    allowed = name in analyst_functions() or name in LAKE_FUNCTIONS
    if not allowed or node.get("catalog") or node.get("schema", "") not in ("", "main"):
        raise NotReadOnly(f"searchlake sql only reads the lake's views; the function {name}() is not allowed")


def _function_name(node: dict) -> str:
    return str(node.get("function_name", "")).lower()


@lru_cache(maxsize=1)
def readable_tables() -> frozenset[str]:
    """The lake's documented SQL surface: its views and tables."""
    views = {m.group(1).lower() for statement in sql_group("views_") for m in _VIEW_NAME.finditer(statement)}
    return frozenset(views | set(LAKE_TABLES))


@lru_cache(maxsize=1)
def lake_tables() -> frozenset[str]:
    """The lake's own tables, as the schema files create them."""
    return frozenset(m.group(1).lower() for statement in sql_group("schema_") for m in _TABLE_NAME.finditer(statement))


@lru_cache(maxsize=1)
def analyst_functions() -> frozenset[str]:
    """Scalar and aggregate functions (and macros that only compute) of a
    DuckDB with no extension loaded, less those that read the engine's state."""
    bare = duckdb.connect()
    try:
        bare.execute("SET autoload_known_extensions = false")
        names = {row[0].lower() for row in bare.execute(
            # a macro that queries (the engine's views, say) is not a computation on values
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type IN ('scalar', 'aggregate') "
            "OR (function_type = 'macro' AND macro_definition NOT ILIKE '%select%')").fetchall()}
    finally:
        bare.close()
    return frozenset(n for n in names if n not in ENGINE_STATE_FUNCTIONS
                     and not n.startswith(("duckdb_", "pragma_", "pg_", "has_")))
