"""The only module that opens DuckDB connections.

The lake's tables live in a DuckLake catalog: every table's rows are Parquet
files under the lake's `tables/` folder, and the catalog (an embedded SQLite
or DuckDB file, or a PostgreSQL database shared by many machines) records
which files make up each snapshot. A transaction commits whole or not at
all, readers see one consistent snapshot, and commits from several processes
are serialized by the engine.

An embedded SQLite catalog (the default) runs in SQLite's write-ahead-log
mode, where readers never block the writer nor the writer them: a notebook
or a dashboard may keep it attached while searchlake works. searchlake's own
sessions that write also hold a file lock, so that its writers take turns
rather than fail each other's commits (SQLite refuses a commit built on a
snapshot another writer has moved past); its read-only sessions need none.
A DuckDB-file catalog admits one process at a time, so every session on it
holds the lock. A second searchlake command waits for the lock up to
`SEARCHLAKE_LOCK_TIMEOUT` seconds and then says the catalog is busy. Threads
of one process (a server's runs) take turns before that, as long as their
turns take: a process is never busy against itself. A PostgreSQL catalog
needs no lock.

Whatever the catalog, another connection holding it for a moment (a program
with the DuckDB file open, a SQLite writer, a PostgreSQL transaction that
lost a race) or a commit that conflicts with another writer's is waited out
and the work run again, up to the lock timeout; after that the command says
the catalog is busy (CatalogBusy, tasks/lake/engine_errors.py), in one line.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import duckdb

from tasks.common.settings import Settings
from tasks.lake.catalog_lock import session_lock
from tasks.lake.commits import commit_description, commit_scope, current_flow_run
from tasks.lake.definitions import Definition, foreign_definitions, repair_statements, require_own_definitions
from tasks.lake.engine import ALIAS, BUILTINS_FIRST, SHARED_ENGINE, TABLES_FOLDER, admits_one_process, new_reader
from tasks.lake.engine_errors import (CatalogBusy, CatalogError, CatalogUnavailable, engine_errors,
                                      said_plainly)
from tasks.lake.files import Lake, LakeWrite
from tasks.lake.retries import run_again_when_contended
from tasks.lake.sqlfiles import sql, sql_group

__all__ = ["ALIAS", "TABLES_FOLDER", "Catalog", "CatalogBusy", "CatalogError", "CatalogUnavailable",
           "commit_scope", "current_flow_run", "open_catalog"]

T = TypeVar("T")


class Catalog:
    def __init__(self, con: duckdb.DuckDBPyConnection, lake: Lake, settings: Settings):
        self.con = con
        self.lake = lake
        self.settings = settings
        self._in_transaction = False

    def run(self, name: str, params: list | tuple | None = None) -> duckdb.DuckDBPyConnection:
        """Run the statement kept in sql/<name>.sql. Outside a transaction it
        commits by itself, and runs again if that commit conflicts with
        another writer's (an UPDATE of the same small table, say) or the
        catalog is held for a moment. The engine's errors come out as
        searchlake's (tasks/lake/engine_errors.py)."""
        def once() -> duckdb.DuckDBPyConnection:
            with engine_errors():
                return self.con.execute(sql(name), params or [])

        if self._in_transaction:
            return once()
        return run_again_when_contended(once, self.settings)

    def rows(self, name: str, params: list | tuple | None = None) -> list[tuple]:
        cursor = self.run(name, params)
        with engine_errors():
            return cursor.fetchall()

    def set_variables(self, **values) -> None:
        for name, value in values.items():
            self.con.execute(f"SET VARIABLE {name} = ?", [value])

    def require_own_definitions(self) -> None:
        """Refuse (ForeignDefinition) a catalog that holds, at the snapshot
        this session reads, a view or macro searchlake did not write."""
        with engine_errors():
            require_own_definitions(self.con, self.settings.catalog_location)

    def transaction(self, work: Callable[["Catalog"], T], write: LakeWrite | None = None, *, action: str,
                    detail: str = "", task_id: str | None = None, own_definitions_only: bool = True) -> T:
        """Run `work` in one DuckLake transaction and commit it, described in
        the lake's history by `action`, `detail` and `task_id` (see
        describe_commit; `work` may describe it better once it knows more).
        When the commit conflicts with another writer's, or the catalog is
        held for a moment, `work` runs again on the new snapshot (so it must
        decide from what it reads, not from what it read before). Files
        `write` replaced are deleted once the commit is in. The catalog's
        definitions are checked again at the transaction's own snapshot
        (unless `own_definitions_only` is False: the work replaces them)."""
        def once() -> T:
            with engine_errors():
                self.con.begin()
                self._in_transaction = True
                try:
                    if own_definitions_only:
                        self.require_own_definitions()
                    self.describe_commit(action, detail, task_id=task_id)
                    result = work(self)
                    self.con.commit()
                    return result
                except BaseException:
                    self._rollback()
                    raise
                finally:
                    self._in_transaction = False

        result = run_again_when_contended(once, self.settings)
        if write is not None:
            write.delete_replaced()
        return result

    def _rollback(self) -> None:
        try:
            self.con.rollback()
        except duckdb.Error:  # a failed commit already ended it
            pass

    def describe_commit(self, action: str, detail: str = "", *, task_id: str | None = None,
                        task_ids: Iterable[str] = ()) -> None:
        """Say what the transaction in progress did, for the lake's history
        (see tasks/lake/commits.py). The last description before the commit
        is the one kept."""
        self.con.execute(sql("commit_describe"), list(commit_description(action, detail, task_id=task_id,
                                                                         task_ids=task_ids)))

    def confine_to_lake(self) -> None:
        """From now on the engine opens only the catalog and the lake's table
        files: no other file, no extension, no setting changed back; and
        past half of the session's memory it spills to disk."""
        self.con.execute(f"SET memory_limit = '{self.settings.sql_memory_mb // 2}MB'")
        self.con.execute("SET allowed_directories = ?", [[self.lake.uri(TABLES_FOLDER)]])
        if admits_one_process(self.settings):  # SQLite opens its file itself, not through the engine
            self.con.execute("SET allowed_paths = ?", [[str(self.settings.catalog_path)]])
        self.con.execute(sql("sandbox_confine"))


# -- opening a session -----------------------------------------------------------

@contextmanager
def open_catalog(settings: Settings, purpose: str = "command", *, read_only: bool = False,
                 confined: bool = False, own_definitions_only: bool = True) -> Iterator[Catalog]:
    """A catalog session, on a catalog whose tables are created or brought
    up to date first. `confined` (read-only) sessions run analysts' SQL in a
    DuckDB of their own: see Catalog.confine_to_lake. Other sessions are
    connections to the process's shared engine; `read_only` is then a
    promise of the caller. A catalog holding a view or macro searchlake did
    not write is refused before anything runs (definitions.py), unless
    `own_definitions_only` is False (`searchlake doctor`). Whatever escapes
    it is searchlake's error (engine_errors.said_plainly): busy, a full
    disk, a CatalogError."""
    lake = Lake(settings.lake_root)
    with session_lock(settings, purpose, read_only), said_plainly(settings):
        if confined:
            with _reader_on_current_schema(settings, lake) as con:
                catalog = Catalog(con, lake, settings)
                catalog.confine_to_lake()
                yield catalog
            return
        with SHARED_ENGINE.session(settings, lake) as con:
            catalog = Catalog(con, lake, settings)
            _ensure_schema(catalog)
            if own_definitions_only:
                catalog.require_own_definitions()
            yield catalog


@contextmanager
def _reader_on_current_schema(settings: Settings, lake: Lake) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB of its own with the lake attached read-only (engine.new_reader),
    on a catalog that holds this version's tables and views. A read-only
    attach cannot make them, so a catalog that lacks them is first brought up
    to date in the shared engine. The shared engine is started for that
    alone: it loads DuckLake and the catalog's client again (DuckDB checks
    each extension's signature, half a second or so for the two), more than
    most confined sessions' work."""
    con = _reader_if_current(settings, lake)
    if con is None:
        with SHARED_ENGINE.session(settings, lake) as shared:
            _ensure_schema(Catalog(shared, lake, settings))
        con = new_reader(settings, lake)
    try:
        yield con
    finally:
        con.close()


def _reader_if_current(settings: Settings, lake: Lake) -> duckdb.DuckDBPyConnection | None:
    """A reader (new_reader) when the catalog holds this version's schema;
    None, with nothing left open, when it is new, made by an earlier
    version, or not (yet) a DuckLake catalog a reader can attach. A
    DuckDB-file catalog gets None too: it admits one program at a time, and
    its sessions keep opening it in the shared engine first, so that a
    program holding it is met as by every other command (busy)."""
    if admits_one_process(settings) or (settings.catalog_is_embedded and not settings.catalog_path.exists()):
        return None
    try:
        con = new_reader(settings, lake)
    except CatalogError:  # the shared engine makes it, or says plainly what is wrong with it
        return None
    try:
        current = _stored_fingerprint(Catalog(con, lake, settings)) == _schema_fingerprint()
    except BaseException:
        con.close()
        raise
    if not current:
        con.close()
        return None
    return con


# -- the schema ------------------------------------------------------------------

def _schema_statements() -> list[str]:
    """The tables, then the views over them. The views are the catalog's
    own, not a session's: any DuckDB that attaches the lake sees them, at
    any snapshot since they were made."""
    return sql_group("schema_") + sql_group("views_")


def _schema_fingerprint() -> str:
    return hashlib.sha256("\n".join(_schema_statements()).encode()).hexdigest()[:16]


def _stored_fingerprint(catalog: Catalog) -> str | None:
    try:
        found = catalog.con.execute("SELECT fingerprint FROM searchlake_schema").fetchall()
    except duckdb.CatalogException:
        return None
    return found[0][0] if found else None


# Threads of one process make or update a catalog's schema one at a time:
# two sessions of the shared engine creating a fresh catalog's tables at once
# leave one of them in an aborted transaction ("Current transaction is
# aborted"), which no retry mends. Other processes are met by DuckLake's
# conflict and the fingerprint check in `apply`.
_SCHEMA_TURN = threading.Lock()


def _ensure_schema(catalog: Catalog) -> None:
    """Create or update the tables and views when their files changed since
    the catalog last saw them (a fingerprint of them is kept in the catalog):
    a lake made by an earlier version gets what it lacks on its next open."""
    with _SCHEMA_TURN:
        _bring_schema_up_to_date(catalog)


def _bring_schema_up_to_date(catalog: Catalog) -> None:
    wanted = _schema_fingerprint()
    if _stored_fingerprint(catalog) == wanted:
        return

    def apply(cat: Catalog) -> None:
        if _stored_fingerprint(cat) == wanted:  # another process did it meanwhile
            return
        make_schema(cat)
        cat.con.execute("DELETE FROM searchlake_schema")
        cat.con.execute("INSERT INTO searchlake_schema VALUES (?, now())", [wanted])

    catalog.transaction(apply, action="schema", detail=f"tables and views of version {wanted}",
                        own_definitions_only=False)


def repair_definitions(catalog: Catalog) -> list[Definition]:
    """Remove what the catalog defines that searchlake did not write (see
    definitions.repair_statements) and make searchlake's own views and
    macros again, in one transaction; return what was removed."""
    def repair(cat: Catalog) -> list[Definition]:
        foreign = foreign_definitions(cat.con)
        for statement in repair_statements(foreign):
            cat.con.execute(statement)
        make_schema(cat)
        return foreign

    return catalog.transaction(repair, action="repair", detail="views and macros searchlake did not write removed",
                               own_definitions_only=False)


def make_schema(catalog: Catalog) -> None:
    """Create what the lake lacks and replace its views and macros with
    searchlake's own, in the lake's schema."""
    catalog.con.execute(f"SET search_path = '{ALIAS}.main'")
    try:
        for statement in _schema_statements():
            catalog.con.execute(statement)
    finally:
        catalog.con.execute(BUILTINS_FIRST)
