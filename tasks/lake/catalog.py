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
the catalog is busy (CatalogBusy), in one line.
"""

from __future__ import annotations

import errno
import getpass
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import import_module
from importlib.resources import files
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import duckdb
from filelock import FileLock, Timeout
from tenacity import RetryCallState, Retrying, retry_if_exception, wait_random_exponential

from tasks.common.errors import is_disk_full, is_lock_contention
from tasks.common.redaction import redact
from tasks.common.settings import DEFAULT_CATALOG_FILE, Settings, secret_value
from tasks.lake.files import Lake, LakeWrite
from tasks.lake.sqlfiles import sql, sql_group

T = TypeVar("T")
ALIAS = "lake"
TABLES_FOLDER = "tables/"
# Whole units of work are re-run when a commit conflicts with another
# writer's (DuckLake itself retries commits that do not conflict).
CONFLICT_RETRIES = 12
ATTACH_ATTEMPTS = 5
# Pauses between tries grow up to this (seconds), each a random share of it,
# so that writers that met do not meet again.
LONGEST_PAUSE = 1.0
# Free bytes under which a SQLite catalog's I/O error is taken for a full disk.
LOW_ROOM = 1 << 20
# The package file of DuckDB's SQLite client is named after the package, but
# DuckDB loads a file by path only under the extension's own name.
SQLITE_CLIENT_FILE = "sqlite_scanner.duckdb_extension"

# What a failed catalog statement raises, for callers outside the lake package.
CatalogError = duckdb.Error


class CatalogBusy(RuntimeError):
    """Another command or program held the catalog past the lock timeout."""


class CatalogUnavailable(RuntimeError):
    """The catalog cannot be opened: its database server is unreachable, say."""


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
        catalog is held for a moment."""
        if self._in_transaction:
            return self.con.execute(sql(name), params or [])
        return _run_again_when_contended(lambda: self.con.execute(sql(name), params or []), self.settings)

    def rows(self, name: str, params: list | tuple | None = None) -> list[tuple]:
        return self.run(name, params).fetchall()

    def set_variables(self, **values) -> None:
        for name, value in values.items():
            self.con.execute(f"SET VARIABLE {name} = ?", [value])

    def transaction(self, work: Callable[["Catalog"], T], write: LakeWrite | None = None, *, action: str,
                    detail: str = "", task_id: str | None = None) -> T:
        """Run `work` in one DuckLake transaction and commit it, described in
        the lake's history by `action`, `detail` and `task_id` (see
        describe_commit; `work` may describe it better once it knows more).
        When the commit conflicts with another writer's, or the catalog is
        held for a moment, `work` runs again on the new snapshot (so it must
        decide from what it reads, not from what it read before). Files
        `write` replaced are deleted once the commit is in."""
        def once() -> T:
            self.con.begin()
            self._in_transaction = True
            try:
                self.describe_commit(action, detail, task_id=task_id)
                result = work(self)
                self.con.commit()
                return result
            except BaseException:
                self._rollback()
                raise
            finally:
                self._in_transaction = False

        result = _run_again_when_contended(once, self.settings)
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
        (`searchlake history`, DuckLake's snapshots()): "consolidate T: 21
        sources". Its author is this user and host (and the flow run it
        belongs to); the enclosing commit_scope labels come first; the tasks
        it concerns are kept in its extra info, for finding it by task. The
        last description before the commit is the one kept."""
        scopes = _SCOPES.get()
        named = task_id is not None and all(scope.task_id != task_id for scope in scopes)
        head = f"{action} {task_id}" if named else action
        message = ": ".join([*(s.label for s in scopes if s.label), f"{head}: {detail}" if detail else head])
        tasks = sorted({*task_ids, *([task_id] if task_id else []), *(s.task_id for s in scopes if s.task_id)})
        self.con.execute(sql("commit_describe"), [commit_author(), message,
                                                  json.dumps({"tasks": tasks}) if tasks else None])

    def confine_to_lake(self) -> None:
        """From now on the engine opens only the catalog and the lake's table
        files: no other file, no extension, no setting changed back."""
        self.con.execute("SET allowed_directories = ?", [[self.lake.uri(TABLES_FOLDER)]])
        if _admits_one_process(self.settings):  # SQLite opens its file itself, not through the engine
            self.con.execute("SET allowed_paths = ?", [[str(self.settings.catalog_path)]])
        self.con.execute(sql("sandbox_confine"))


def _run_again_when_contended(attempt_once: Callable[[], T], settings: Settings) -> T:
    """attempt_once(), again after a random and growing pause while its
    commit conflicts with another writer's (up to CONFLICT_RETRIES times) or
    the catalog is held by another connection (up to the lock timeout);
    CatalogBusy when that does not end."""
    try:
        return _retrying(settings, _is_commit_conflict, CONFLICT_RETRIES + 1)(attempt_once)
    except duckdb.Error as exc:
        if _is_commit_conflict(exc) or is_lock_contention(exc):
            raise _busy(settings, exc) from None
        raise


def _is_commit_conflict(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.TransactionException) and "conflict" in str(exc).lower()


def _retrying(settings: Settings, is_race: Callable[[BaseException], bool], race_attempts: int) -> Retrying:
    """Tries again after a catalog error that waiting can cure: lock
    contention until the lock timeout has passed, a race (`is_race`) up to
    `race_attempts` tries. The first wait for a held catalog is said on
    stderr, as a wait for the file lock is."""
    said = False

    def give_up(state: RetryCallState) -> bool:
        exc = state.outcome.exception()
        if is_lock_contention(exc):
            return state.seconds_since_start >= settings.lock_timeout
        return state.attempt_number >= race_attempts

    def say_waiting(state: RetryCallState) -> None:
        nonlocal said
        exc = state.outcome.exception()
        if is_lock_contention(exc) and not said:
            said = True
            print(f"waiting for the catalog, {_holder_of(exc)}", file=sys.stderr)

    def worth_another_try(exc: BaseException) -> bool:
        return isinstance(exc, duckdb.Error) and (is_lock_contention(exc) or is_race(exc))

    return Retrying(retry=retry_if_exception(worth_another_try), stop=give_up,
                    wait=wait_random_exponential(multiplier=0.02, max=LONGEST_PAUSE),
                    before_sleep=say_waiting, reraise=True)


def _busy(settings: Settings, exc: BaseException) -> CatalogBusy:
    return CatalogBusy(f"catalog {settings.catalog_shown} is busy: {_holder_of(exc)}; try again when it ends")


_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>\S+) \(PID (?P<pid>\d+)\)")


def _holder_of(exc: BaseException) -> str:
    """Who holds the catalog, as far as the engine's words tell."""
    text = str(exc)
    if found := _LOCK_HOLDER.search(text):
        return f"another program has it open (pid {found['pid']}, {Path(found['program']).name})"
    if is_lock_contention(exc):
        return "another connection has it locked"
    return "other writers keep changing the same rows"


# -- opening a session -----------------------------------------------------------

@contextmanager
def open_catalog(settings: Settings, purpose: str = "command", *, read_only: bool = False,
                 confined: bool = False) -> Iterator[Catalog]:
    """A catalog session, on a catalog whose tables are created or brought
    up to date first. `confined` (read-only) sessions run analysts' SQL in a
    DuckDB of their own: see Catalog.confine_to_lake. Other sessions are
    connections to the process's shared engine; `read_only` is then a
    promise of the caller."""
    lake = Lake(settings.lake_root)
    with _session_lock(settings, purpose, read_only), _catalog_errors_said_plainly(settings):
        if confined:
            with _ENGINE.session(settings, lake) as catalog:
                _ensure_schema(catalog)
            with _own_engine(settings, lake) as catalog:
                catalog.confine_to_lake()
                yield catalog
            return
        with _ENGINE.session(settings, lake) as catalog:
            _ensure_schema(catalog)
            yield catalog


# -- what each commit says about itself -------------------------------------------

@dataclass(frozen=True)
class _Scope:
    label: str | None
    task_id: str | None
    flow_run_id: str | None


_SCOPES: ContextVar[tuple[_Scope, ...]] = ContextVar("commit_scopes", default=())


@contextmanager
def commit_scope(label: str | None = None, *, task_id: str | None = None,
                 flow_run_id: str | None = None) -> Iterator[None]:
    """Every commit made inside (in this thread, and in the threads of the
    Prefect tasks it starts: they copy its context) belongs to what the
    scope names: its message starts with `label` ("research T run R"), it
    concerns `task_id`, and its author names the flow run."""
    token = _SCOPES.set(_SCOPES.get() + (_Scope(label, task_id, flow_run_id),))
    try:
        yield
    finally:
        _SCOPES.reset(token)


def current_flow_run() -> str | None:
    """The Prefect flow run the commits made now belong to (commit_scope), if any."""
    flow_runs = [scope.flow_run_id for scope in _SCOPES.get() if scope.flow_run_id]
    return flow_runs[-1] if flow_runs else None


def commit_author() -> str:
    """Who commits: user@host, and the Prefect flow run when inside one.
    Never anything of the settings (a catalog's connection string may hold
    a password)."""
    who = f"{_user()}@{socket.gethostname()}"
    flow_run = current_flow_run()
    return f"{who} flow-run {flow_run}" if flow_run else who


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid with no name (some containers)
        return f"uid{os.getuid()}"


def _session_lock(settings: Settings, purpose: str, read_only: bool):
    """The embedded catalog's file lock, for the sessions that need it (see
    the module's docstring)."""
    if not settings.catalog_is_embedded or (read_only and settings.catalog_is_sqlite):
        return nullcontext()
    return _embedded_lock(settings, purpose)


@contextmanager
def _catalog_errors_said_plainly(settings: Settings) -> Iterator[None]:
    """A catalog still held by another connection after the waits is said
    as busy, and a SQLite catalog that found no room for its log files as a
    full disk, whatever statement met it."""
    try:
        yield
    except duckdb.Error as exc:
        if is_lock_contention(exc):
            raise _busy(settings, exc) from None
        if settings.catalog_is_sqlite and _sqlite_out_of_room(settings, exc):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(settings.catalog_path)) from None
        raise


def _sqlite_out_of_room(settings: Settings, exc: duckdb.Error) -> bool:
    """SQLite says only "disk I/O error" when it cannot grow its shared-memory
    file (it says "database or disk is full" when a write finds no room)."""
    return "disk i/o error" in str(exc).lower() and shutil.disk_usage(settings.catalog_path.parent).free < LOW_ROOM


def _admits_one_process(settings: Settings) -> bool:
    return settings.catalog_is_embedded and not settings.catalog_is_sqlite


class _SharedEngine:
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
    def session(self, settings: Settings, lake: Lake) -> Iterator[Catalog]:
        key = (settings.catalog_location, lake.uri(TABLES_FOLDER))
        with self._changed:
            while self._attached not in (None, key) and self._users:
                self._changed.wait()
            if self._attached not in (None, key):
                self._detach()
            if self._db is None:
                self._db = _new_engine()
            if self._attached is None:
                _use_temp_folder(self._db, settings)
                _attach_lake(self._db, settings, lake, read_only=False)
                self._attached = key
            self._users += 1
            con = self._db.cursor()
        try:
            con.execute(f"USE {ALIAS}")
            yield Catalog(con, lake, settings)
        finally:
            con.close()
            with self._changed:
                self._users -= 1
                if not self._users and _admits_one_process(settings):
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


_ENGINE = _SharedEngine()


def _say_checkpoint_failed(exc: duckdb.IOException) -> None:
    cause = str(exc).rsplit("Original error: ", 1)[-1].strip()
    full = " (the disk is full)" if is_disk_full(exc) else ""
    print(f"warning: the work is committed, but the catalog could not fold its write-ahead log into its "
          f"file{full}: {redact(cause)}; the next command that finds room does it", file=sys.stderr)


@contextmanager
def _own_engine(settings: Settings, lake: Lake) -> Iterator[Catalog]:
    con = _new_engine()
    try:
        _use_temp_folder(con, settings)
        _attach_lake(con, settings, lake, read_only=True)
        con.execute(f"USE {ALIAS}")
        yield Catalog(con, lake, settings)
    finally:
        con.close()


def _new_engine() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()  # in memory: sessions' temp tables and views live here
    con.execute("SET autoinstall_known_extensions = false; SET autoload_known_extensions = false")
    _load_extension(con, "ducklake")
    return con


def _use_temp_folder(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Spill large sorts and joins under the home: DuckDB's default is a
    `.tmp` folder in whatever directory the command was started from."""
    con.execute("SET temp_directory = ?", [str(Path(settings.home) / "tmp")])


def _attach_lake(con: duckdb.DuckDBPyConnection, settings: Settings, lake: Lake, *, read_only: bool) -> None:
    if settings.catalog_is_sqlite:
        _load_sqlite_client(con, settings)
    elif not settings.catalog_is_embedded:
        _install_catalog_client(con, settings)
    if not lake.is_local:
        _load_extension(con, "httpfs")
        _create_s3_secret(con, settings)
    options = [f"DATA_PATH {_literal(lake.uri(TABLES_FOLDER))}"]
    if settings.catalog_is_embedded:  # the home may have moved; a shared catalog's path must match
        options.append("OVERRIDE_DATA_PATH true")
    if settings.catalog_is_sqlite:
        options += _sqlite_options(settings, read_only)
    if read_only:
        options.append("READ_ONLY")
    _refuse_a_catalog_moved_away(settings)
    try:
        _attach(con, f"ATTACH {_literal('ducklake:' + settings.catalog_location)} AS {ALIAS} ({', '.join(options)})",
                settings)
    except duckdb.IOException as exc:
        if is_lock_contention(exc):
            raise _busy(settings, exc) from None
        reason = redact(" ".join(str(exc).split()).rsplit(": ", 1)[-1])
        raise CatalogUnavailable(f"cannot open the catalog {settings.catalog_shown}: {reason}") from None


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


def _load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Extensions come from their PyPI packages (duckdb-extension-<name>):
    DuckDB would otherwise download them, which needs the internet."""
    con.execute(f"LOAD {_literal(_extension_file(name))}")


def _attach(con: duckdb.DuckDBPyConnection, statement: str, settings: Settings) -> None:
    """Processes that meet a fresh shared catalog race to create DuckLake's
    own tables in it; the losers attach again to the winner's. A catalog
    another program holds (a DuckDB file it has open) is waited for."""
    _retrying(settings, lambda exc: "already exists" in str(exc), ATTACH_ATTEMPTS)(con.execute, statement)


def _extension_file(name: str) -> str:
    package = files(import_module(f"duckdb_extension_{name}"))
    return str(package / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension")


def _load_sqlite_client(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
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
    con.execute(f"LOAD {_literal(str(link))}")


def _install_catalog_client(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """ATTACH 'ducklake:postgres:...' loads the PostgreSQL client extension
    by its own name (postgres_scanner) from the extension directory: it is
    installed there from its package, once per home."""
    folder = Path(settings.home) / "extensions"
    folder.mkdir(parents=True, exist_ok=True)
    con.execute("SET extension_directory = ?", [str(folder)])
    with FileLock(str(folder / ".install.lock")):
        con.execute(f"INSTALL {_literal(_extension_file('postgres'))}")


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


def _literal(text: str) -> str:
    """A SQL string literal (ATTACH and LOAD take no parameters)."""
    return "'" + text.replace("'", "''") + "'"


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


def _ensure_schema(catalog: Catalog) -> None:
    """Create or update the tables and views when their files changed since
    the catalog last saw them (a fingerprint of them is kept in the catalog):
    a lake made by an earlier version gets what it lacks on its next open."""
    wanted = _schema_fingerprint()
    if _stored_fingerprint(catalog) == wanted:
        return

    def apply(cat: Catalog) -> None:
        if _stored_fingerprint(cat) == wanted:  # another process did it meanwhile
            return
        for statement in _schema_statements():
            cat.con.execute(statement)
        cat.con.execute("DELETE FROM searchlake_schema")
        cat.con.execute("INSERT INTO searchlake_schema VALUES (?, now())", [wanted])

    catalog.transaction(apply, action="schema", detail=f"tables and views of version {wanted}")


# -- the embedded catalog's lock --------------------------------------------------------

@contextmanager
def _embedded_lock(settings: Settings, purpose: str) -> Iterator[None]:
    path = settings.catalog_path
    path.parent.mkdir(parents=True, exist_ok=True)
    holder_file = path.with_name(path.name + ".holder")
    lock = FileLock(str(path) + ".lock")
    with _turn_of_this_thread(os.path.realpath(lock.lock_file)):
        _acquire(lock, holder_file, settings.lock_timeout)
        try:
            holder_file.write_text(json.dumps({"pid": os.getpid(), "purpose": purpose, "since": time.time()}))
            yield
        finally:
            lock.release()


_TURNS: dict[str, threading.Lock] = {}  # one per embedded catalog this process uses
_TURNS_GUARD = threading.Lock()
_HELD_BY_THREAD = threading.local()


@contextmanager
def _turn_of_this_thread(key: str) -> Iterator[None]:
    """Threads of this process wait here for each other, without a time
    limit: their sessions are short, and the file lock's timeout is for
    other processes. A thread that already holds the catalog is refused at
    once, since it would wait for itself forever."""
    held: set[str] = _HELD_BY_THREAD.__dict__.setdefault("keys", set())
    if key in held:
        raise CatalogBusy(f"catalog {key.removesuffix('.lock')} is busy: this thread already holds it "
                          "(a catalog session cannot open inside another)")
    with _TURNS_GUARD:
        turn = _TURNS.setdefault(key, threading.Lock())
    with turn:
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)


def _acquire(lock: FileLock, holder_file: Path, timeout: float) -> None:
    try:
        lock.acquire(timeout=min(0.2, timeout))
        return
    except Timeout:
        pass
    holder = _read_holder(holder_file)
    print(f"waiting for the catalog, held by {holder}", file=sys.stderr)
    try:
        lock.acquire(timeout=max(0.0, timeout - 0.2))
    except Timeout:
        raise CatalogBusy(
            f"catalog {holder_file.with_suffix('')} is busy: held by {holder}; try again when it ends"
        ) from None


def _read_holder(holder_file: Path) -> str:
    try:
        info = json.loads(holder_file.read_text())
        return f"pid {info['pid']} ({info['purpose']})"
    except (OSError, ValueError, KeyError):
        return "another searchlake command"
