"""The catalog's definitions are input: only searchlake's own are run.

A view or a macro lives in the catalog, and anyone who can write the catalog
(every worker of a shared PostgreSQL lake can) can define one. DuckDB
resolves a name through the catalog's schema before its built-ins in a
session that `USE`s the lake, and through the view's own schema first inside
a view, so a macro named `lower` or a view named `"Bundles"` planted there
would run inside searchlake's sessions. Two things stop that:

- searchlake's sessions look names up in the engine's built-ins before the
  lake (engine.BUILTINS_FIRST), so a planted function never shadows one in
  searchlake's own statements;
- before a session runs anything, and again at the start of each
  transaction, the catalog's views and macros in the lake's `main` schema
  are compared with searchlake's own (sql/views_*.sql, the macros of
  sql/schema_*.sql) as DuckLake stores them. Anything else there, or any
  table whose name differs from one of searchlake's only in case, is
  refused in one line naming it (ForeignDefinition); `searchlake doctor`
  lists them and `searchlake doctor --repair` removes them.

Other schemas of the lake are never named by searchlake and may hold an
analyst's own views and macros.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import duckdb

from schemas.errors import UserError
from tasks.lake.sql_guard import lake_tables
from tasks.lake.sqlfiles import sql, sql_group

_VIEW = re.compile(r"(?is)^\s*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(\w+)\s+AS\s+(.*?)\s*;?\s*$")
_MACRO = re.compile(r"(?is)^\s*CREATE\s+(?:OR\s+REPLACE\s+)?MACRO\s+(\w+)\s*\(([^)]*)\)\s+AS\s+(TABLE\s+)?(.*?)\s*;?\s*$")
_COMMENT_LINES = re.compile(r"(?m)^\s*--.*$")


class ForeignDefinition(UserError):
    """The catalog holds a definition searchlake did not write."""


@dataclass(frozen=True)
class Definition:
    kind: str   # view, macro or table
    name: str
    body: str | None

    def said(self) -> str:
        return f"a {self.kind} {self.name}{'()' if self.kind == 'macro' else ''}"


@lru_cache(maxsize=1)
def own_definitions() -> dict[tuple[str, str], str]:
    """searchlake's views and macros, (kind, name) -> the text DuckLake keeps
    of them: a view's query and a macro's body as the engine writes them
    back (json_deserialize_sql of its parse), which is what DuckLake stores."""
    bare = duckdb.connect()
    try:
        found: dict[tuple[str, str], str] = {}
        for statement in _statements(bare, sql_group("views_")):
            view = _VIEW.match(statement)
            if view:
                found[("view", view.group(1))] = _rendered(bare, view.group(2))
        for statement in _statements(bare, sql_group("schema_")):
            macro = _MACRO.match(statement)
            if macro:
                name, parameters, table, body = macro.groups()
                rendered = _rendered(bare, body) if table else _rendered(bare, f"SELECT {body}")[len("SELECT "):]
                found[("macro", name)] = (f"{'table' if table else 'scalar'} {rendered} PARAMETERS "
                                          + ", ".join(f"{p.strip()}=NULL" for p in parameters.split(",")))
        return found
    finally:
        bare.close()


def _statements(con: duckdb.DuckDBPyConnection, texts: list[str]) -> list[str]:
    return [_COMMENT_LINES.sub("", s.query).strip() for text in texts for s in con.extract_statements(text)]


def _rendered(con: duckdb.DuckDBPyConnection, query: str) -> str:
    return con.execute("SELECT json_deserialize_sql(json_serialize_sql(?))", [query]).fetchone()[0]


def catalog_definitions(con: duckdb.DuckDBPyConnection) -> list[Definition]:
    """The views, macros and tables of the lake's `main` schema at the
    snapshot the connection reads (inside a transaction: the transaction's)."""
    snapshot = con.execute("SELECT id FROM lake.current_snapshot()").fetchone()[0]
    return [Definition(*row) for row in con.execute(sql("catalog_definitions"), [snapshot]).fetchall()]


def foreign_definitions(con: duckdb.DuckDBPyConnection) -> list[Definition]:
    """What the catalog defines that searchlake did not write: views and
    macros other than its own or altered, and tables named like one of its
    own in another case (DuckDB would read either for the name)."""
    ours = own_definitions()
    own_names = {name.lower(): name for _, name in ours} | {name: name for name in lake_tables()}
    foreign = []
    for found in catalog_definitions(con):
        if found.kind == "table":
            if own_names.get(found.name.lower(), found.name) != found.name:
                foreign.append(found)
        elif ours.get((found.kind, found.name)) != found.body:
            foreign.append(found)
    return foreign


# (catalog, schema version) found to hold only searchlake's definitions: a
# version holds the same definitions whenever it is read.
_verified: set[tuple[str, int]] = set()


def require_own_definitions(con: duckdb.DuckDBPyConnection, catalog: str) -> None:
    """Raise ForeignDefinition when `catalog` holds, at the snapshot the
    connection reads, a definition searchlake did not write (see
    foreign_definitions)."""
    version = con.execute(sql("catalog_schema_version")).fetchone()[0]
    if (catalog, version) in _verified:
        return
    _refuse(foreign_definitions(con))
    _verified.add((catalog, version))


def _refuse(foreign: list[Definition]) -> None:
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise ForeignDefinition(
            f"the catalog holds {foreign[0].said()}{more} that searchlake did not write, which could run inside "
            "its sessions; nothing was run. `searchlake doctor` shows what and `searchlake doctor --repair` "
            "removes it (a different version of searchlake writing the same catalog also shows here: run one "
            "version everywhere)")


def repair_statements(foreign: list[Definition]) -> list[str]:
    """The statements that remove what searchlake did not write: foreign
    views and macros are dropped (its own are made again afterwards);
    a table is data, so it is never dropped here: it is renamed aside."""
    statements = []
    for found in foreign:
        name = _quoted(found.name)
        if found.kind == "view":
            statements.append(f"DROP VIEW IF EXISTS lake.main.{name}")
        elif found.kind == "macro":
            kind = "MACRO TABLE" if found.body and found.body.startswith("table ") else "MACRO"
            statements.append(f"DROP {kind} IF EXISTS lake.main.{name}")
        else:
            statements.append(f"ALTER TABLE lake.main.{name} RENAME TO {_quoted(found.name + '_foreign')}")
    return statements


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
