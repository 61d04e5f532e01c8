"""DuckLake on plain DuckDB: the recipes the lake builds on, proved here.

Extensions, offline. The extension binaries come from PyPI wheels
(duckdb-extension-ducklake, -postgres, -httpfs) under
<site-packages>/duckdb_extension_<name>/extensions/v<duckdb version>/. Each
connection sets autoinstall/autoload off and an extension_directory; `INSTALL
'<wheel file>'` copies a binary there (once; later INSTALLs are no-ops), and
`LOAD <name>` loads it by name. The postgres binary's own name is
`postgres_scanner`: `LOAD '<path>/postgres.duckdb_extension'` fails ("did not
contain the expected entrypoint function"), and ATTACH 'ducklake:postgres:...'
loads postgres_scanner from the extension directory by itself, so it must be
INSTALLed there.

Catalog. `ATTACH 'ducklake:postgres:dbname=... host=... port=... user=...' AS
lake (DATA_PATH '...')`; several processes may write at once. A commit that
loses the race for the next snapshot id is retried by DuckLake
(`ducklake_max_retry_count`, default 10); a real conflict (two transactions
deleting the same rows) reaches the application as duckdb.TransactionException.

Object store. A DATA_PATH on s3:// needs httpfs LOADed (DuckLake checks it);
the bytes then go either through httpfs with an S3 secret, or through an
fsspec filesystem registered on the connection, which DuckDB prefers over
httpfs for its protocol.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
from pathlib import Path

import duckdb
import pytest

EXTENSIONS = ("postgres", "ducklake", "httpfs")
WRITERS = 3
COMMITS_PER_WRITER = 20
ROWS_PER_COMMIT = 500


def extension_file(name: str) -> Path:
    """Where a duckdb-extension-<name> wheel keeps its binary for this DuckDB."""
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"duckdb-extension-{name} is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"


def connect(extension_dir: str, *load: str) -> duckdb.DuckDBPyConnection:
    """A connection that never reaches for the network to find an extension."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                 "extension_directory": extension_dir})
    for name in load:
        con.execute(f"LOAD {name}")
    return con


def attach(con: duckdb.DuckDBPyConnection, catalog: str, data_path: str) -> None:
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data_path}')")


@pytest.fixture(scope="module")
def extension_dir(tmp_path_factory) -> str:
    """A private extension directory holding the wheels' binaries."""
    folder = str(tmp_path_factory.mktemp("duckdb-extensions"))
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                 "extension_directory": folder})
    for name in EXTENSIONS:
        con.execute(f"INSTALL '{extension_file(name)}'")
    con.close()
    return folder


@pytest.fixture
def lake(extension_dir, postgres_catalog, tmp_path):
    """A new DuckLake (PostgreSQL catalog, local data path) with one table."""
    data_path = f"{tmp_path / 'data'}/"
    con = connect(extension_dir, "ducklake")
    attach(con, postgres_catalog, data_path)
    con.execute("CREATE TABLE lake.events (writer INTEGER, commit_no INTEGER, n BIGINT)")
    yield con, postgres_catalog, data_path
    con.close()


# -- extension loading ---------------------------------------------------------

def test_the_postgres_binary_loads_by_its_own_name(extension_dir, tmp_path):
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    with pytest.raises(duckdb.IOException, match="postgres_duckdb_cpp_init"):
        con.execute(f"LOAD '{extension_file('postgres')}'")
    installed = {path.name for path in Path(extension_dir).rglob("*.duckdb_extension")}
    assert installed == {"postgres_scanner.duckdb_extension", "ducklake.duckdb_extension",
                         "httpfs.duckdb_extension"}


def test_ducklake_cannot_attach_postgres_unless_it_is_installed(postgres_catalog, tmp_path):
    only_ducklake = tmp_path / "extensions"
    con = connect(str(only_ducklake))
    con.execute(f"INSTALL '{extension_file('ducklake')}'")
    con.execute("LOAD ducklake")
    with pytest.raises(duckdb.IOException, match="postgres_scanner"):
        attach(con, postgres_catalog, f"{tmp_path / 'data'}/")


def test_ducklake_loads_postgres_itself_when_installed(lake):
    con, _, _ = lake
    loaded = {row[0] for row in con.execute(
        "SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert {"ducklake", "postgres_scanner"} <= loaded


# -- (a) several processes commit into one table -------------------------------

def write_commits(extension_dir: str, catalog: str, data_path: str, writer: int, start, results) -> None:
    """One writer process: COMMITS_PER_WRITER transactions of ROWS_PER_COMMIT rows."""
    errors = []
    try:
        con = connect(extension_dir, "ducklake")
        attach(con, catalog, data_path)
        start.wait(timeout=60)
        for commit_no in range(COMMITS_PER_WRITER):
            try:
                con.execute("BEGIN")
                con.execute("INSERT INTO lake.events SELECT ?, ?, range FROM range(?)",
                            [writer, commit_no, ROWS_PER_COMMIT])
                con.execute("COMMIT")
            except duckdb.Error as error:
                errors.append(f"{type(error).__name__}: {error}")
                con.execute("ROLLBACK")
        con.close()
    except Exception as error:  # reported to the parent, which fails the test with it
        errors.append(f"{type(error).__name__}: {error}")
    results.put((writer, errors))


def spawn():
    # Not fork: the parent process holds DuckDB and PostgreSQL client threads.
    return multiprocessing.get_context("spawn")


def test_three_processes_commit_into_one_table_at_once(lake, extension_dir):
    con, catalog, data_path = lake
    context = spawn()
    start, results = context.Barrier(WRITERS), context.Queue()
    writers = [context.Process(target=write_commits, args=(extension_dir, catalog, data_path, n, start, results))
               for n in range(WRITERS)]
    for process in writers:
        process.start()
    outcomes = dict(results.get(timeout=120) for _ in writers)
    for process in writers:
        process.join(timeout=30)

    assert outcomes == {n: [] for n in range(WRITERS)}
    per_commit = con.execute("SELECT writer, commit_no, count(*), count(DISTINCT n) FROM lake.events "
                             "GROUP BY ALL ORDER BY ALL").fetchall()
    assert per_commit == [(w, c, ROWS_PER_COMMIT, ROWS_PER_COMMIT)
                          for w in range(WRITERS) for c in range(COMMITS_PER_WRITER)]
    assert con.execute("SELECT count(*) FROM lake.events").fetchone()[0] == WRITERS * COMMITS_PER_WRITER * ROWS_PER_COMMIT
    # Every commit is its own snapshot (plus the one that created the table).
    snapshots = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]
    assert snapshots >= WRITERS * COMMITS_PER_WRITER + 1


# -- (b) a reader's transaction keeps its snapshot ------------------------------

def commit_once(extension_dir: str, catalog: str, data_path: str, rows: int) -> None:
    con = connect(extension_dir, "ducklake")
    attach(con, catalog, data_path)
    con.execute("INSERT INTO lake.events SELECT 9, 0, range FROM range(?)", [rows])
    con.close()


def test_a_reader_in_a_transaction_sees_a_stable_snapshot(lake, extension_dir):
    con, catalog, data_path = lake
    con.execute("INSERT INTO lake.events SELECT 0, 0, range FROM range(100)")
    con.execute("BEGIN")
    assert con.execute("SELECT count(*) FROM lake.events").fetchone()[0] == 100

    writer = spawn().Process(target=commit_once, args=(extension_dir, catalog, data_path, 250))
    writer.start()
    writer.join(timeout=60)
    assert writer.exitcode == 0

    assert con.execute("SELECT count(*) FROM lake.events").fetchone()[0] == 100
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM lake.events").fetchone()[0] == 350


# -- (c) conflicts ---------------------------------------------------------------

def two_sessions(extension_dir: str, catalog: str, data_path: str, retries: int | None = None):
    """Two independent DuckDB instances on one lake, as two processes would be."""
    sessions = []
    for _ in range(2):
        session = connect(extension_dir, "ducklake")
        if retries is not None:
            session.execute(f"SET ducklake_max_retry_count = {retries}")
        attach(session, catalog, data_path)
        sessions.append(session)
    return sessions


def delete_in_both(first, second) -> None:
    first.execute("BEGIN")
    second.execute("BEGIN")
    first.execute("DELETE FROM lake.events WHERE n < 10")
    second.execute("DELETE FROM lake.events WHERE n < 10")
    first.execute("COMMIT")


@pytest.mark.parametrize("retries", [None, 100])
def test_deleting_the_same_rows_twice_raises_a_transaction_exception(lake, extension_dir, retries):
    con, catalog, data_path = lake
    con.execute("INSERT INTO lake.events SELECT 0, 0, range FROM range(1000)")
    first, second = two_sessions(extension_dir, catalog, data_path, retries)
    delete_in_both(first, second)

    # DuckLake's own retries cannot resolve a real conflict, however many it may make.
    with pytest.raises(duckdb.TransactionException) as raised:
        second.execute("COMMIT")
    print(f"\n{type(raised.value).__module__}.{type(raised.value).__name__}: {raised.value}")
    assert isinstance(raised.value, duckdb.OperationalError)
    assert "Transaction conflict" in str(raised.value)
    assert "another transaction has deleted from it" in str(raised.value)

    # The loser's session stays usable: the application retries the whole transaction.
    assert second.execute("SELECT count(*) FROM lake.events").fetchone()[0] == 990
    second.execute("BEGIN")
    assert second.execute("DELETE FROM lake.events WHERE n < 10").fetchone()[0] == 0
    second.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM lake.events").fetchone()[0] == 990


def test_concurrent_appends_rely_on_ducklakes_commit_retries(lake, extension_dir):
    con, catalog, data_path = lake
    first, second = two_sessions(extension_dir, catalog, data_path, retries=0)
    first.execute("BEGIN")
    second.execute("BEGIN")
    first.execute("INSERT INTO lake.events VALUES (1, 0, 1)")
    second.execute("INSERT INTO lake.events VALUES (2, 0, 2)")
    first.execute("COMMIT")
    # Two appends do not conflict; only the race for the next snapshot id is lost, and
    # without retries that loss reaches the application.
    with pytest.raises(duckdb.TransactionException, match="maximum retry count of 0"):
        second.execute("COMMIT")

    first, second = two_sessions(extension_dir, catalog, data_path)
    first.execute("BEGIN")
    second.execute("BEGIN")
    first.execute("INSERT INTO lake.events VALUES (1, 1, 1)")
    second.execute("INSERT INTO lake.events VALUES (2, 1, 2)")
    first.execute("COMMIT")
    second.execute("COMMIT")
    assert con.execute("SELECT writer FROM lake.events ORDER BY writer").fetchall() == [(1,), (1,), (2,)]


# -- (d) the data path in an object store ----------------------------------------

def write_and_read_back(con) -> None:
    con.execute("CREATE TABLE lake.pages (id BIGINT, body VARCHAR)")
    con.execute("INSERT INTO lake.pages SELECT range, 'page ' || range FROM range(20000)")
    con.execute("DELETE FROM lake.pages WHERE id % 2 = 1")
    assert con.execute("SELECT count(*), sum(id) FROM lake.pages").fetchone() == (10000, 99990000)


def test_ducklake_writes_to_s3_through_httpfs_with_a_secret(extension_dir, postgres_catalog, s3_endpoint, s3_bucket):
    con = connect(extension_dir, "ducklake", "httpfs")
    # A temporary secret, per connection; parameters keep the keys out of the SQL text.
    con.execute("CREATE SECRET lake_s3 (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', "
                "USE_SSL false)", ["test", "test", "us-east-1", s3_endpoint.removeprefix("http://")])
    assert "secret=redacted" in con.execute("SELECT secret_string FROM duckdb_secrets()").fetchone()[0]
    attach(con, postgres_catalog, f"s3://{s3_bucket.name}/httpfs/")
    write_and_read_back(con)
    keys = s3_bucket.keys("httpfs/")
    assert any(key.startswith("httpfs/main/pages/ducklake-") and key.endswith(".parquet") for key in keys)
    assert any("delete" in key for key in keys)


def test_ducklake_writes_to_s3_through_a_registered_fsspec_filesystem(extension_dir, postgres_catalog,
                                                                     s3_endpoint, s3_bucket, tmp_path):
    s3fs = pytest.importorskip("s3fs")

    class RecordingS3(s3fs.S3FileSystem):
        opened: list[tuple[str, str]] = []

        def _open(self, path, mode="rb", *args, **kwargs):
            RecordingS3.opened.append((path, mode))
            return super()._open(path, mode, *args, **kwargs)

    fs = RecordingS3(key="test", secret="test", skip_instance_cache=True,
                     client_kwargs={"endpoint_url": s3_endpoint, "region_name": "us-east-1"})

    # DuckLake refuses an s3:// data path unless httpfs is loaded, even with fsspec registered.
    without_httpfs = connect(extension_dir, "ducklake")
    without_httpfs.register_filesystem(fs)
    with pytest.raises(duckdb.Error, match="requires the extension httpfs"):
        attach(without_httpfs, postgres_catalog, f"s3://{s3_bucket.name}/fsspec/")

    # With httpfs loaded but no secret, every byte goes through the registered filesystem
    # (httpfs alone would try the real AWS endpoint).
    con = connect(extension_dir, "ducklake", "httpfs")
    con.register_filesystem(fs)
    attach(con, postgres_catalog, f"s3://{s3_bucket.name}/fsspec/")
    write_and_read_back(con)
    written = {path for path, mode in RecordingS3.opened if mode.startswith("w")}
    assert written and all(path.startswith(f"{s3_bucket.name}/fsspec/main/pages/") for path in written)
    assert {f"{s3_bucket.name}/{key}" for key in s3_bucket.keys("fsspec/")} == written
