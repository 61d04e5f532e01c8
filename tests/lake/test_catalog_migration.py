"""A home an earlier version left with a DuckDB-file catalog (catalog.ducklake)
keeps working on it, each command saying so once with the way out;
`searchlake migrate-catalog` moves it to SQLite, after which the lake reads
exactly as before — rows, snapshots, time travel, reports — and goes on
growing. A migration killed at any moment leaves the home on one whole
catalog, and runs to its end when started again."""

from __future__ import annotations

import json
import os
import random
import signal
import time

import pytest
from tests.report_helpers import PLAN

from tasks.common.settings import Settings
from tasks.reporting.report import publish_report
from tests.conftest import LakeDriver
from tests.lake.test_concurrency import write_bundles

NOTE = "note: this home keeps its catalog in the DuckDB file"
# A migration checks every table at a dozen snapshots: half a minute on a busy machine.
MIGRATION_SECONDS = 300


@pytest.fixture
def earlier_lake(duckdb_file_home, inbox, new_bundle, new_item) -> LakeDriver:
    """A lake with some history: landings in several commits (the small ones
    kept inside the catalog), a bundle replaced (its rows deleted), two tasks
    consolidated, a report of one of them."""
    lake = LakeDriver(duckdb_file_home)
    write_bundles(inbox, new_bundle, new_item, "big", range(1, 6), items=40)
    lake.ingest(inbox.folder / "big")
    lake.consolidate("t1")
    lake.ingest(inbox.write(new_bundle("q9", [new_item("https://small.example/1", 0.9)]), "small/q9.json"))
    lake.ingest(inbox.write(new_bundle("q9", [new_item("https://small.example/2", 0.8)]), "again/q9.json"),
                replace=True)
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://other.example/", 0.5)], task_id="t2"),
                            "t2/q1.json"))
    lake.consolidate("t1")
    lake.consolidate("t2")
    publish_report(duckdb_file_home, "t1", PLAN)
    return lake


def what_a_reader_sees(lake: LakeDriver) -> dict:
    earlier = lake.rows("SELECT min(snapshot_id) + 3 FROM lake.snapshots()")[0][0]
    return {
        "consolidated": lake.rows("SELECT * FROM consolidated ORDER BY task_id, final_rank"),
        "bundles": lake.rows("SELECT * FROM bundles ORDER BY ALL"),
        "results": lake.rows("SELECT * FROM results ORDER BY ALL"),
        "cursor": lake.rows("SELECT * FROM search_read_cursor ORDER BY task_id"),
        "reports": lake.rows("SELECT * FROM reports ORDER BY ALL"),
        "citations": lake.rows("SELECT * FROM report_citations ORDER BY ALL"),
        "snapshots": lake.rows("SELECT snapshot_id, snapshot_time, changes FROM lake.snapshots() ORDER BY 1"),
        "then": lake.rows(f"SELECT * FROM lake.results AT (VERSION => {earlier}) ORDER BY ALL"),
    }


def test_an_earlier_home_keeps_working_and_says_so_once(cli, earlier_lake, inbox, new_bundle, new_item):
    done = cli.run("ingest", inbox.write(new_bundle("q20", [new_item("https://late.example/")]), "late/q20.json"))
    assert done.returncode == 0, done.stderr
    (note,) = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert note.startswith(f"{NOTE} {earlier_lake.settings.catalog_path}") and "searchlake migrate-catalog" in note
    assert earlier_lake.count("bundles") == 8
    assert not (earlier_lake.settings.catalog_path.with_name("catalog.sqlite")).exists()


def test_a_migrated_lake_reads_as_before_grows_on_and_is_not_migrated_twice(cli, earlier_lake, inbox, new_bundle,
                                                                             new_item, error_lines_of):
    before = what_a_reader_sees(earlier_lake)
    report_before = cli.run("report", "--task-id", "t1", "--format", "json").stdout
    old = earlier_lake.settings.catalog_path

    done = cli.run("migrate-catalog", timeout=MIGRATION_SECONDS)
    assert done.returncode == 0, done.stderr
    assert f"the home's catalog is now {old.with_name('catalog.sqlite')}" in done.stdout
    assert NOTE not in done.stderr

    migrated = LakeDriver(Settings())
    assert migrated.settings.catalog_path == old.with_name("catalog.sqlite")
    assert not old.exists() and old.with_name("catalog.ducklake.migrated").exists()
    assert what_a_reader_sees(migrated) == before
    after = cli.run("report", "--task-id", "t1", "--format", "json")
    assert json.loads(after.stdout) == json.loads(report_before) and NOTE not in after.stderr

    # the lake goes on where it was: new snapshots after the old, small commits and deletes
    migrated.ingest(inbox.write(new_bundle("q9", [new_item("https://small.example/3", 0.7)]), "third/q9.json"),
                    replace=True)
    migrated.consolidate("t1", rebuild=True)
    assert migrated.rows("SELECT url FROM results WHERE query_id = 'q9'") == [("https://small.example/3",)]
    snapshots = migrated.rows("SELECT snapshot_id FROM lake.snapshots() ORDER BY 1")
    assert snapshots[:len(before["snapshots"])] == [row[:1] for row in before["snapshots"]]
    assert len(snapshots) > len(before["snapshots"])
    assert cli.run("compact").returncode == 0
    assert migrated.rows("SELECT url FROM results WHERE query_id = 'q9'") == [("https://small.example/3",)]

    # a second migration has nothing to do (one test: each migration checks the whole lake's history)
    done = cli.run("migrate-catalog", timeout=MIGRATION_SECONDS)
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert line.startswith("error: nothing to migrate: the home's catalog is ") and line.endswith("catalog.sqlite")


def test_a_configured_catalog_is_not_migrated(cli, settings, error_lines_of):
    done = cli.run("migrate-catalog", SEARCHLAKE_CATALOG=str(settings.home / "mine.ducklake"))
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert "SEARCHLAKE_CATALOG names the catalog" in line


def test_a_killed_migration_leaves_one_whole_catalog(cli, earlier_lake):
    before = what_a_reader_sees(earlier_lake)
    holder = earlier_lake.settings.catalog_path.with_name("catalog.ducklake.holder")
    for delay in (0.1, 0.5, 1.0, 2.0):
        holder.unlink(missing_ok=True)
        proc = cli.popen("migrate-catalog")
        while proc.poll() is None and "migrate-catalog\"" not in _read(holder):
            time.sleep(0.002)  # until it holds the old catalog to copy it
        time.sleep(delay * random.uniform(0.5, 1.5))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=MIGRATION_SECONDS)
        assert what_a_reader_sees(LakeDriver(Settings())) == before, f"killed {delay} s into the copy"
        if proc.returncode == 0:
            break  # it finished before the kill: nothing more to interrupt
    done = cli.run("migrate-catalog", timeout=MIGRATION_SECONDS)
    assert done.returncode in (0, 2), done.stderr  # 2: the killed one had already moved it
    final = LakeDriver(Settings())
    assert final.settings.catalog_path.name == "catalog.sqlite"
    assert what_a_reader_sees(final) == before
    assert not list(final.settings.catalog_path.parent.glob("*.migrating*"))


def _read(path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
