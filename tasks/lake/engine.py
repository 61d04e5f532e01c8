"""The DuckDB engine behind catalog sessions: one in-memory DuckDB per
process with DuckLake loaded from its package, the lake attached to it, and
the clients a catalog or a lake needs (SQLite, PostgreSQL, S3)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
from filelock import FileLock

from schemas.errors import is_disk_full, is_lock_contention
from tasks.common.redaction import redact, without_password
from tasks.common.settings import DEFAULT_CATALOG_FILE, Settings, secret_value
from tasks.lake.engine_errors import AttachRace, CatalogUnavailable, engine_error
from tasks.lake.files import Lake
from tasks.lake.retries import ATTACH_ATTEMPTS, run_again_when_contended

ALIAS = "lake"
TABLES_FOLDER = "tables/"
# Names in searchlake's sessions are looked up in the engine's built-ins
# before the lake's schema: a function the catalog defines (anyone who can
# write the catalog can) never shadows a built-in one (see definitions.py).
# Objects are created with their schema named (lake.main, temp).
BUILTINS_FIRST = f"SET search_path = 'system.main,{ALIAS}.main'"
# The package file of DuckDB's SQLite client is named after the package, but
# DuckDB loads a file by path only under the extension's own name.
SQLITE_CLIENT_FILE = "sqlite_scanner.duckdb_extension"


def admits_one_process(settings: Settings) -> bool:
    return settings.catalog_is_embedded and not settings.catalog_is_sqlite


class SharedEngine:
    """One in-memory DuckDB per process, with the extensions loaded once
    (loading DuckLake costs more than most sessions' work): each session is
    a connection to it, with its own transactions and temp objects. The lake
    stays attached while sessions use it, and after them unless its catalog
    is a DuckDB file: that file is let go after each use, so that the next
    command (perhaps another process) can open it. Sessions on another lake
    than the attached one wait until it is free."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._db: duckdb.DuckDBPyConnection | None = None
        self._attached: tuple[str, str] | None = None
        self._users = 0

    @contextmanager
    def session(self, settings: Settings, lake: Lake) -> Iterator[duckdb.DuckDBPyConnection]:
        key = (settings.catalog_location, lake.uri(TABLES_FOLDER))
        with self._changed:
            while self._attached not in (None, key) and self._users:
                self._changed.wait()
            if self._attached not in (None, key):
                self._detach()
            if self._db is None:
                self._db = new_engine()
            if self._attached is None:
                use_temp_folder(self._db, settings)
                attach_lake(self._db, settings, lake, read_only=False)
                self._attached = key
            self._users += 1
            con = self._db.cursor()
        try:
            use_lake(con)
            yield con
        finally:
            con.close()
            with self._changed:
                self._users -= 1
                if not self._users and admits_one_process(settings):
                    self._detach()
                self._changed.notify_all()

    def _detach(self) -> None:
        try:
            self._db.execute(f"DETACH {ALIAS}")  # DuckLake's own catalog database goes with it
        except duckdb.IOException as exc:
            if "CHECKPOINT during DETACH failed" not in str(exc):
                raise
            # What committed is in the catalog's write-ahead log (a later open
            # replays it); only folding it into the file failed. The engine is
            # left in a state it calls invalidated, so the next session gets a new one.
            _say_checkpoint_failed(exc)
            self._db.close()
            self._db = None
        finally:
            self._attached = None


SHARED_ENGINE = SharedEngine()


def _say_checkpoint_failed(exc: duckdb.IOException) -> None:
    cause = str(exc).rsplit("Original error: ", 1)[-1].strip()
    full = " (the disk is full)" if is_disk_full(exc) else ""
    print(f"warning: the work is committed, but the catalog could not fold its write-ahead log into its "
          f"file{full}: {redact(cause)}; the next command that finds room does it", file=sys.stderr)


def new_reader(settings: Settings, lake: Lake) -> duckdb.DuckDBPyConnection:
    """A DuckDB of its own with the lake attached read-only; the caller closes it."""
    con = new_engine()
    try:
        use_temp_folder(con, settings)
        attach_lake(con, settings, lake, read_only=True)
        use_lake(con)
    except BaseException:
        con.close()
        raise
    return con


def use_lake(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"USE {ALIAS}")
    con.execute(BUILTINS_FIRST)


def new_engine() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()  # in memory: sessions' temp tables and views live here
    con.execute("SET autoinstall_known_extensions = false; SET autoload_known_extensions = false")
    _load_extension(con, "ducklake")
    return con


def use_temp_folder(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Spill large sorts and joins under the home: DuckDB's default is a
    `.tmp` folder in whatever directory the command was started from."""
    con.execute("SET temp_directory = ?", [str(Path(settings.home) / "tmp")])


def attach_lake(con: duckdb.DuckDBPyConnection, settings: Settings, lake: Lake, *, read_only: bool) -> None:
    location = settings.catalog_location
    if settings.catalog_is_sqlite:
        load_sqlite_client(con, settings)
    elif not settings.catalog_is_embedded:
        _install_catalog_client(con, settings)
        location = _catalog_password_as_secret(con, location)
    if not lake.is_local:
        _load_extension(con, "httpfs")
        _create_s3_secret(con, settings)
    options = [f"DATA_PATH {literal(lake.uri(TABLES_FOLDER))}"]
    if settings.catalog_is_embedded:  # the home may have moved; a shared catalog's path must match
        options.append("OVERRIDE_DATA_PATH true")
    if settings.catalog_is_sqlite:
        options += _sqlite_options(settings, read_only)
    if read_only:
        options.append("READ_ONLY")
    _refuse_a_catalog_moved_away(settings)
    _attach(con, f"ATTACH {literal('ducklake:' + location)} AS {ALIAS} ({', '.join(options)})", settings)


def _sqlite_options(settings: Settings, read_only: bool) -> list[str]:
    """Write-ahead-log mode (kept in the file once set) lets readers and the
    writer work at once; in SQLite's default mode a reader's open
    transaction stops every commit. SQLite itself waits for a lock up to
    the lock timeout."""
    options = [f"META_BUSY_TIMEOUT {int(settings.lock_timeout * 1000)}"]
    if not read_only:
        options.append("META_JOURNAL_MODE 'WAL'")
    return options


def _refuse_a_catalog_moved_away(settings: Settings) -> None:
    """A process that chose the home's DuckDB-file catalog before it was
    migrated must not create an empty one in its place."""
    if settings.catalog_is_earlier_file and not settings.catalog_path.exists():
        raise CatalogUnavailable(f"the catalog {settings.catalog_path} was migrated to "
                                 f"{settings.catalog_path.with_name(DEFAULT_CATALOG_FILE)} since this command "
                                 "started: run it again")


def _attach(con: duckdb.DuckDBPyConnection, statement: str, settings: Settings) -> None:
    """Processes that meet a fresh shared catalog race to create DuckLake's
    own tables in it; the losers attach again to the winner's. A catalog
    another program holds (a DuckDB file it has open) is waited for; one
    that cannot be opened is CatalogUnavailable."""
    def attempt() -> None:
        try:
            con.execute(statement)
        except duckdb.Error as exc:
            if "already exists" in str(exc):
                raise AttachRace(str(exc)) from exc
            if isinstance(exc, duckdb.IOException) and not is_lock_contention(exc):
                reason = redact(" ".join(str(exc).split()).rsplit(": ", 1)[-1])
                raise CatalogUnavailable(f"cannot open the catalog {settings.catalog_shown}: {reason}") from exc
            raise engine_error(exc) from exc

    run_again_when_contended(attempt, settings, ATTACH_ATTEMPTS)


def _load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Extensions come from their PyPI packages (duckdb-extension-<name>):
    DuckDB would otherwise download them, which needs the internet."""
    con.execute(f"LOAD {literal(_extension_file(name))}")


def _extension_file(name: str) -> str:
    package = files(import_module(f"duckdb_extension_{name}"))
    return str(package / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension")


def load_sqlite_client(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """DuckDB's SQLite client, loaded from its package through a link under
    its own name in the home (INSTALL would copy its 35 MB into every home)."""
    folder = Path(settings.home) / "extensions"
    link, target = folder / SQLITE_CLIENT_FILE, Path(_extension_file("sqlite"))
    if not (link.is_symlink() and link.resolve() == target.resolve()):
        folder.mkdir(parents=True, exist_ok=True)
        fresh = folder / f".{SQLITE_CLIENT_FILE}.{os.getpid()}.{threading.get_ident()}"
        fresh.unlink(missing_ok=True)
        fresh.symlink_to(target)
        os.replace(fresh, link)  # whole: another process may be loading it
    con.execute(f"LOAD {literal(str(link))}")


def _install_catalog_client(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """ATTACH 'ducklake:postgres:...' loads the PostgreSQL client extension
    by its own name (postgres_scanner) from the extension directory: it is
    installed there from its package, once per home."""
    folder = Path(settings.home) / "extensions"
    folder.mkdir(parents=True, exist_ok=True)
    con.execute("SET extension_directory = ?", [str(folder)])
    with FileLock(str(folder / ".install.lock")):
        con.execute(f"INSTALL {literal(_extension_file('postgres'))}")


def _catalog_password_as_secret(con: duckdb.DuckDBPyConnection, location: str) -> str:
    """The catalog's connection string without its password, which goes to
    the PostgreSQL client as the engine's default secret for it instead: a
    connection string shows in the engine's list of databases, a secret's
    password never does."""
    location, password = without_password(location)
    if password is not None:
        con.execute("LOAD postgres_scanner")  # the secret's type is the client's (installed above)
        con.execute("CREATE OR REPLACE SECRET (TYPE postgres, PASSWORD ?)", [password])
    return location


def _create_s3_secret(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """The engine's S3 credentials for this connection only (never stored),
    from the same AWS_* variables s3fs reads."""
    parts, values = ["TYPE s3"], []
    for key, value in (("KEY_ID", secret_value(settings.aws_access_key_id)),
                       ("SECRET", secret_value(settings.aws_secret_access_key)),
                       ("SESSION_TOKEN", secret_value(settings.aws_session_token)),
                       ("REGION", settings.aws_region)):
        if value:
            parts.append(f"{key} ?")
            values.append(value)
    if settings.aws_endpoint_url:
        endpoint = urlsplit(settings.aws_endpoint_url)
        parts += ["ENDPOINT ?", "URL_STYLE 'path'", f"USE_SSL {str(endpoint.scheme == 'https').lower()}"]
        values.append(endpoint.netloc)
    con.execute(f"CREATE OR REPLACE SECRET lake_s3 ({', '.join(parts)})", values)


def literal(text: str) -> str:
    """A SQL string literal (ATTACH and LOAD take no parameters)."""
    return "'" + text.replace("'", "''") + "'"
