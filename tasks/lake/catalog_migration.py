"""Moving a home's DuckDB-file catalog to SQLite (`searchlake migrate-catalog`).

Earlier versions kept the embedded catalog in a DuckDB file
(catalog.ducklake), which admits one process at a time; in SQLite
(catalog.sqlite) other programs may read the lake while searchlake works.
DuckLake keeps everything it knows of the lake — snapshots, tables, views,
data files, statistics, the rows of small commits — in its own tables of the
catalog database, so moving is copying those tables row for row into a
SQLite catalog DuckLake has created. The Parquet files stay where they are.

The copy is built beside the old catalog under a temporary name and checked
before it is used: through DuckLake, both catalogs must list the same
snapshots, tables and views, every table must hold the same rows now and at
earlier snapshots, and read the same files. One rename then makes it the
home's catalog, and the old file is renamed `*.migrated` (kept). Killed at
any moment, a migration leaves the home on its old catalog or on the new
one, never between; run again, it starts over or says it is done.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from tasks.common.settings import DEFAULT_CATALOG_FILE, DUCKDB_CATALOG_FILE, Settings
from schemas.errors import InternalError, UserError
from tasks.lake.catalog import open_catalog
from tasks.lake.catalog_lock import embedded_lock
from tasks.lake.engine import TABLES_FOLDER, literal, load_sqlite_client, new_engine
from tasks.lake.engine_errors import said_plainly
from tasks.lake.files import Lake
from tasks.lake.sqlfiles import sql

BUILDING_SUFFIX = ".migrating"
KEPT_SUFFIX = ".migrated"
# Earlier snapshots whose tables are compared (the first, the last, and
# evenly between): every one would take as long as the lake's history.
SNAPSHOTS_COMPARED = 12
# DuckLake keeps these types as text in a SQLite catalog (a column of
# numbers would lose NaN; SQLite has no nested types); the rest as they are.
_SQLITE_TEXT_TYPES = ("FLOAT", "DOUBLE", "VARIANT")


class MigrationRefused(UserError):
    """Nothing to migrate, or a catalog that is not the home's earlier default."""


class MigrationFailed(InternalError):
    """The copy did not read as the original: the home keeps its old catalog."""


def migrate_catalog(settings: Settings) -> list[str]:
    """Move the home's DuckDB-file catalog to SQLite; what was done, as lines."""
    old = _catalog_to_migrate(settings)
    new = old.with_name(DEFAULT_CATALOG_FILE)
    building = new.with_name(new.name + BUILDING_SUFFIX)
    with open_catalog(settings, "migrate-catalog: bring up to date"):
        pass  # DuckLake's tables and searchlake's schema are brought to this version first
    with embedded_lock(settings, "migrate-catalog"), said_plainly(settings):
        _remove_catalog_file(building)
        try:
            copied = _copy_metadata(settings, old, building)
            compared = _compare_lakes(settings, old, building)
        except BaseException:
            _remove_catalog_file(building)
            raise
        os.replace(building, new)
        _sync_folder(new.parent)
        kept = old.with_name(old.name + KEPT_SUFFIX)
        _move_with_its_log(old, kept)
        _sync_folder(new.parent)
    return [f"copied {copied['tables']} metadata tables ({copied['rows']:,} rows) from {old} to {new}",
            f"checked: {compared['snapshots']} snapshots, {compared['tables']} tables and {compared['views']} views "
            f"read the same, now and at {compared['earlier']} earlier snapshots",
            f"the home's catalog is now {new}; the old one is kept as {kept}"]


def _catalog_to_migrate(settings: Settings) -> Path:
    if settings.catalog:
        raise MigrationRefused("SEARCHLAKE_CATALOG names the catalog: migrate-catalog moves a home's own "
                               "DuckDB-file catalog (unset SEARCHLAKE_CATALOG to use the home's)")
    if not settings.catalog_is_earlier_file:
        earlier = settings.catalog_path.with_name(DUCKDB_CATALOG_FILE)
        unread = f" (the earlier {earlier} is no longer read)" if earlier.exists() else ""
        raise MigrationRefused(f"nothing to migrate: the home's catalog is {settings.catalog_path}{unread}")
    return settings.catalog_path


def _copy_metadata(settings: Settings, old: Path, building: Path) -> dict:
    """DuckLake's tables of `old`, row for row, into a new SQLite catalog at `building`."""
    con = new_engine()
    try:
        # DuckLake keeps a SQLite catalog's timestamps as text in UTC
        con.execute("SET TimeZone = 'UTC'")
        load_sqlite_client(con, settings)
        data_path = Lake(settings.lake_root).uri(TABLES_FOLDER)
        con.execute(f"ATTACH {literal('ducklake:sqlite:' + str(building))} AS fresh (DATA_PATH {literal(data_path)})")
        con.execute("DETACH fresh")  # its tables are made: now filled as plain tables
        con.execute(f"ATTACH {literal(str(old))} AS source (READ_ONLY)")
        con.execute(f"ATTACH {literal(str(building))} AS target (TYPE sqlite)")
        made = {name for name, _, _ in con.execute(sql("migrate_tables"), ["target"]).fetchall()}
        tables = con.execute(sql("migrate_tables"), ["source"]).fetchall()
        rows = 0
        con.begin()
        for name, columns, types in tables:
            if name not in made:  # DuckLake makes these as tables get rows kept in the catalog
                con.execute(f"CREATE TABLE target.{_ident(name)} ({_column_definitions(columns, types)})")
            con.execute(f"DELETE FROM target.{_ident(name)}")
            listed = ", ".join(map(_ident, columns))
            con.execute(f"INSERT INTO target.{_ident(name)} ({listed}) SELECT {listed} FROM source.{_ident(name)}")
            rows += con.execute(f"SELECT count(*) FROM source.{_ident(name)}").fetchone()[0]
        con.commit()
    finally:
        con.close()
    return {"tables": len(tables), "rows": rows}


def _column_definitions(columns: list[str], types: list[str]) -> str:
    return ", ".join(f"{_ident(column)} {_sqlite_type(kind)}" for column, kind in zip(columns, types))


def _sqlite_type(duckdb_type: str) -> str:
    nested = duckdb_type.endswith("]") or duckdb_type.startswith(("STRUCT", "MAP", "UNION"))
    return "VARCHAR" if nested or duckdb_type in _SQLITE_TEXT_TYPES else duckdb_type


def _compare_lakes(settings: Settings, old: Path, building: Path) -> dict:
    """Both catalogs read through DuckLake: MigrationFailed at the first difference."""
    con = new_engine()
    try:
        load_sqlite_client(con, settings)
        data_path = literal(Lake(settings.lake_root).uri(TABLES_FOLDER))
        for alias, location in (("before", str(old)), ("after", f"sqlite:{building}")):
            con.execute(f"ATTACH {literal('ducklake:' + location)} AS {alias} "
                        f"(DATA_PATH {data_path}, OVERRIDE_DATA_PATH true, READ_ONLY)")
        snapshots = _same(con, "snapshots", lambda db: con.execute(sql("migrate_snapshots"), [db]).fetchall())
        objects = _same(con, "tables and views", lambda db: con.execute(sql("migrate_lake_objects"), [db]).fetchall())
        tables = [(schema, name) for schema, name, kind, _ in objects if kind == "table"]
        earlier = _snapshots_to_compare([row[0] for row in snapshots])
        for schema, name in tables:
            _same(con, f"the rows of {name}", lambda db: _fingerprint(con, db, schema, name))
            _same(con, f"the files of {name}", lambda db: sorted(con.execute(
                "SELECT data_file, delete_file FROM ducklake_list_files(?, ?, schema => ?)",
                [db, name, schema]).fetchall()))
            for snapshot in earlier:
                _same(con, f"the rows of {name} at snapshot {snapshot}",
                      lambda db: _fingerprint(con, db, schema, name, snapshot))
    finally:
        con.close()
    return {"snapshots": len(snapshots), "tables": len(tables), "views": len(objects) - len(tables),
            "earlier": len(earlier)}


def _same(con: duckdb.DuckDBPyConnection, what: str, read) -> list:
    before, after = read("before"), read("after")
    if before != after:
        raise MigrationFailed(f"the SQLite copy does not read as the original ({what} differ); "
                              "the home keeps its DuckDB-file catalog")
    return before


def _fingerprint(con: duckdb.DuckDBPyConnection, db: str, schema: str, table: str,
                 snapshot: int | None = None) -> tuple | str:
    """Row count and a sum of row hashes (order-free), or why it cannot be read."""
    at = f" AT (VERSION => {int(snapshot)})" if snapshot is not None else ""
    try:
        return con.execute(f"SELECT count(*), sum(hash(t)) FROM {db}.{_ident(schema)}.{_ident(table)} AS t{at}"
                           ).fetchone()
    except duckdb.CatalogException:  # the table did not exist yet at that snapshot
        return "absent"


def _snapshots_to_compare(ids: list[int]) -> list[int]:
    if len(ids) <= SNAPSHOTS_COMPARED:
        return ids
    step = (len(ids) - 1) / (SNAPSHOTS_COMPARED - 1)
    return sorted({ids[round(i * step)] for i in range(SNAPSHOTS_COMPARED)})


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _remove_catalog_file(path: Path) -> None:
    for leftover in (path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))):
        leftover.unlink(missing_ok=True)


def _move_with_its_log(old: Path, kept: Path) -> None:
    """The DuckDB file, and the write-ahead log a failed checkpoint may have
    left beside it (it holds committed work)."""
    log = old.with_name(old.name + ".wal")
    if log.exists():
        os.replace(log, kept.with_name(kept.name + ".wal"))
    os.replace(old, kept)


def _sync_folder(folder: Path) -> None:
    """The renames reach the disk before the command says they are done."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
