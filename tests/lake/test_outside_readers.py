"""Programs outside searchlake that hold the catalog: a notebook or a
dashboard keeping the lake attached READ_ONLY, another program writing to
the catalog's SQLite file. On the SQLite catalog a reader stops nothing:
ingest, consolidate, `searchlake sql` and the web page go through while it
holds an open transaction, and it goes on reading. A catalog held for a
moment is waited for and the work goes through once it is free; held past
SEARCHLAKE_LOCK_TIMEOUT, the command says the catalog is busy in one line
(exit 2), the page answers 503, and nothing is half done."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import pytest
from starlette.testclient import TestClient

from tasks.server.serve import build_app
from tests.conftest import LakeDriver
from tests.lake.test_concurrency import write_bundles

# Takes SQLite's write lock on the catalog file (what any program writing to
# it holds) and keeps it until its stdin closes.
SQLITE_WRITER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
"""


@pytest.fixture
def sqlite_writer(settings):
    procs: list[subprocess.Popen] = []

    def hold() -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", SQLITE_WRITER, str(settings.catalog_path)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "holding", proc.stderr.read()
        procs.append(proc)
        return proc

    yield hold
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def release(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def page(settings, path: str) -> tuple[int, str]:
    with TestClient(build_app(settings, None), base_url="http://127.0.0.1") as client:
        answer = client.get(path)
    return answer.status_code, answer.text


def landed_bundles(lake) -> int:
    return lake.count("bundles")


# -- the SQLite catalog (the default) --------------------------------------------------

def test_a_reader_holding_the_sqlite_catalog_stops_nothing(cli, lake, settings, inbox, new_bundle, new_item,
                                                           outside_reader):
    write_bundles(inbox, new_bundle, new_item, "first", range(1, 3), items=5)
    write_bundles(inbox, new_bundle, new_item, "second", range(3, 13))
    lake.ingest(inbox.folder / "first")
    reader = outside_reader(settings.catalog_location)
    reader.say("BEGIN")  # a snapshot held open for the whole pipeline
    assert reader.count("results") == 10

    landed = cli.run("ingest", str(inbox.folder / "second"))
    assert landed.returncode == 0 and "landed 10 bundles (500 items)" in landed.stdout, landed.stderr
    consolidated = cli.run("consolidate", "--task-id", "t1")
    assert consolidated.returncode == 0, consolidated.stderr
    counted = cli.run("sql", "select count(*) as n from results", "--format", "csv")
    assert (counted.returncode, counted.stdout) == (0, "n\n510\n"), counted.stderr
    assert page(settings, "/")[0] == 200
    status, text = page(settings, "/tasks/t1")
    assert status == 200 and "second.example" in text

    assert reader.count("results") == 10  # its snapshot, whole
    reader.say("COMMIT")
    assert reader.count("results") == 510
    assert reader.count("consolidated") == lake.count("consolidated") > 0


def test_an_outside_writer_is_waited_for_and_the_ingest_then_lands(cli, lake, inbox, new_bundle, new_item,
                                                                   sqlite_writer):
    write_bundles(inbox, new_bundle, new_item, "first", range(1, 2), items=5)
    write_bundles(inbox, new_bundle, new_item, "second", range(2, 7))
    lake.ingest(inbox.folder / "first")
    writer = sqlite_writer()
    ingest = cli.popen("ingest", str(inbox.folder / "second"), SEARCHLAKE_LOCK_TIMEOUT="120")
    tables = lake.root / "tables" / "main" / "results"
    before = set(tables.rglob("*.parquet"))
    while ingest.poll() is None and set(tables.rglob("*.parquet")) == before:
        time.sleep(0.01)  # until its table files are written: only the commit is left, and it needs the lock
    assert ingest.poll() is None, ingest.communicate()
    release(writer)
    out, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 0 and "Traceback" not in err, err
    assert "landed 5 bundles (250 items)" in out
    assert landed_bundles(lake) == 6


def test_an_outside_writer_past_the_lock_timeout_is_busy_in_one_line(cli, lake, inbox, new_bundle, new_item,
                                                                     sqlite_writer, error_lines_of):
    write_bundles(inbox, new_bundle, new_item, "first", range(1, 2), items=5)
    write_bundles(inbox, new_bundle, new_item, "second", range(2, 7))
    lake.ingest(inbox.folder / "first")
    writer = sqlite_writer()

    done = cli.run("ingest", str(inbox.folder / "second"), SEARCHLAKE_LOCK_TIMEOUT="1")
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert line == (f"error: catalog {lake.settings.catalog_path} is busy: another connection has it locked; "
                    "try again when it ends")
    # readers go on meanwhile, and see nothing of the refused ingest
    counted = cli.run("sql", "select count(*) as n from bundles", "--format", "csv")
    assert (counted.returncode, counted.stdout) == (0, "n\n1\n"), counted.stderr
    release(writer)
    assert cli.run("ingest", str(inbox.folder / "second")).returncode == 0
    assert landed_bundles(lake) == 6


def test_the_sqlite_catalog_is_in_write_ahead_log_mode(lake, settings, inbox, new_bundle, new_item):
    # the mode in which readers and the writer never block each other
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    with sqlite3.connect(settings.catalog_path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# -- a DuckDB-file catalog (an earlier version's home) -----------------------------------

def test_a_program_holding_a_duckdb_file_catalog_is_waited_for(cli, duckdb_file_home, inbox, new_bundle, new_item,
                                                               outside_reader):
    lake = LakeDriver(duckdb_file_home)
    write_bundles(inbox, new_bundle, new_item, "first", range(1, 2), items=5)
    write_bundles(inbox, new_bundle, new_item, "second", range(2, 7))
    lake.ingest(inbox.folder / "first")
    reader = outside_reader(duckdb_file_home.catalog_location)

    ingest = cli.popen("ingest", str(inbox.folder / "second"), SEARCHLAKE_LOCK_TIMEOUT="120")
    said = next(line for line in iter(ingest.stderr.readline, "") if not line.startswith("note:"))
    assert said.startswith(f"waiting for the catalog, another program has it open (pid {reader.pid}, python"), said
    reader.close()
    out, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 0 and "Traceback" not in err, err
    assert "landed 5 bundles (250 items)" in out
    assert landed_bundles(lake) == 6


@pytest.mark.parametrize("command", [["ingest", "{inbox}"], ["consolidate", "--task-id", "t1"],
                                     ["sql", "select count(*) from bundles"]])
def test_a_program_holding_a_duckdb_file_catalog_too_long_is_busy_in_one_line(
        cli, duckdb_file_home, inbox, new_bundle, new_item, outside_reader, error_lines_of, command):
    lake = LakeDriver(duckdb_file_home)
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")]), "first/q1.json"))
    inbox.write(new_bundle("q2", [new_item("https://b.example/")]), "second/q2.json")
    reader = outside_reader(duckdb_file_home.catalog_location)

    done = cli.run(*[arg.format(inbox=inbox.folder / "second") for arg in command], SEARCHLAKE_LOCK_TIMEOUT="1")
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert line.startswith(f"error: catalog {duckdb_file_home.catalog_path} is busy: another program has it open "
                           f"(pid {reader.pid}, python")
    assert line.endswith("; try again when it ends")
    reader.close()
    assert landed_bundles(lake) == 1


def test_the_page_says_a_held_duckdb_file_catalog_is_busy(duckdb_file_home, inbox, new_bundle, new_item,
                                                          outside_reader):
    LakeDriver(duckdb_file_home).ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    outside_reader(duckdb_file_home.catalog_location)
    quick = duckdb_file_home.model_copy(update={"lock_timeout": 0.5})
    status, text = page(quick, "/")
    assert status == 503 and "The lake is busy" in text and "another program has it open" in text
