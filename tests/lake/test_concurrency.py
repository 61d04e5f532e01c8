"""Two searchlake processes on one lake at the same moment: the second waits
its turn, or says plainly that the catalog is busy; on the SQLite catalog a
reading command does not wait for a writing one. Threads of one process
wait for each other: a process is never busy against itself."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from tasks.common.settings import Settings
from tasks.lake.catalog import CatalogBusy, open_catalog
from tests.conftest import LakeDriver


def finish(proc: subprocess.Popen, timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def first_stderr_line(proc: subprocess.Popen) -> str:
    """Blocks until the process writes a line to stderr (or exits)."""
    return proc.stderr.readline()


def write_bundles(inbox, new_bundle, new_item, prefix: str, queries: range, items: int = 50) -> None:
    for n in queries:
        inbox.write(new_bundle(f"q{n}", [new_item(f"https://{prefix}.example/{n % 3}/{i}", round(i / items, 3))
                                         for i in range(items)]), f"{prefix}/q{n}.json")


def assert_lake_is_settled(lake) -> None:
    assert lake.orphan_table_files() == []
    assert lake.rows("SELECT sum(item_count) FROM bundles")[0][0] == lake.count("results")


def test_two_ingests_at_once_both_land(cli, lake, inbox, new_bundle, new_item, hold_catalog):
    write_bundles(inbox, new_bundle, new_item, "left", range(1, 21))
    write_bundles(inbox, new_bundle, new_item, "right", range(21, 41))
    # Both start while the catalog is held and both say they wait; only then
    # does the holder let go, so the two really do meet at the lock.
    holder = hold_catalog()
    left = cli.popen("ingest", str(inbox.folder / "left"))
    right = cli.popen("ingest", str(inbox.folder / "right"))
    for proc in (left, right):
        assert first_stderr_line(proc).startswith(f"waiting for the catalog, held by pid {holder.pid}")
    holder.release()

    for code, out, err in (finish(left), finish(right)):
        assert code == 0, err
        assert "landed 20 bundles (1000 items)" in out
    assert lake.count("bundles") == 40
    assert lake.count("results") == 2000
    assert lake.rows("SELECT count(DISTINCT landing_seq) FROM bundles")[0][0] == 2
    assert_lake_is_settled(lake)


def test_an_ingest_and_a_consolidate_at_once_leave_a_consistent_lake(cli, lake, inbox, new_bundle, new_item,
                                                                      separate_lake, hold_catalog):
    write_bundles(inbox, new_bundle, new_item, "first", range(1, 21))
    write_bundles(inbox, new_bundle, new_item, "second", range(21, 41))
    assert cli.run("ingest", str(inbox.folder / "first")).returncode == 0

    holder = hold_catalog()
    ingest = cli.popen("ingest", str(inbox.folder / "second"))
    consolidate = cli.popen("consolidate", "--task-id", "t1")
    for proc in (ingest, consolidate):
        assert first_stderr_line(proc).startswith("waiting for the catalog")
    holder.release()  # now they race for it
    assert finish(ingest)[0] == 0
    assert finish(consolidate)[0] == 0
    # Whichever went first, one more run reads what is left, and the result is
    # what a lake that never saw two processes at once holds.
    assert cli.run("consolidate", "--task-id", "t1").returncode == 0

    calm, _ = separate_lake("calm")
    calm.ingest(inbox.folder)
    calm.consolidate()
    assert lake.consolidated() == calm.consolidated()
    assert lake.cursor()["consumed_count"] == calm.cursor()["consumed_count"]
    assert_lake_is_settled(lake)


@pytest.mark.parametrize("command", [["ingest", "{inbox}"], ["consolidate", "--task-id", "t1"]])
def test_a_busy_catalog_is_reported_plainly(cli, lake, inbox, new_bundle, new_item, hold_catalog,
                                            error_lines_of, command):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    holder = hold_catalog()
    args = [arg.format(inbox=inbox.folder) for arg in command]
    assert_busy_then_free(cli, args, holder, error_lines_of)


def test_sql_on_a_busy_duckdb_file_catalog_is_reported_plainly(cli, duckdb_file_home, inbox, new_bundle, new_item,
                                                               hold_catalog, error_lines_of):
    # A DuckDB file admits one process, readers included.
    LakeDriver(duckdb_file_home).ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    holder = hold_catalog()
    assert_busy_then_free(cli, ["sql", "select count(*) from bundles"], holder, error_lines_of)


def assert_busy_then_free(cli, args: list[str], holder, error_lines_of) -> None:
    started = time.monotonic()
    done = cli.run(*args, SEARCHLAKE_LOCK_TIMEOUT="0.5")
    waited = time.monotonic() - started

    assert done.returncode != 0
    (line,) = error_lines_of(done.stderr)
    assert "is busy" in line and f"pid {holder.pid} (test-holder)" in line
    assert waited < 10  # it gave up after the timeout instead of waiting for the holder
    holder.kill()  # a holder that dies without cleaning up must not wedge the lake
    # Once the holder is gone the same command goes through.
    assert cli.run(*args, SEARCHLAKE_LOCK_TIMEOUT="5").returncode == 0


def test_sql_reads_a_sqlite_catalog_while_a_searchlake_writer_holds_it(cli, lake, inbox, new_bundle, new_item,
                                                                       hold_catalog):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    holder = hold_catalog()
    done = cli.run("sql", "select count(*) as n from bundles", "--format", "csv", SEARCHLAKE_LOCK_TIMEOUT="0.5")
    assert (done.returncode, done.stdout) == (0, "n\n1\n"), done.stderr
    holder.release()


# -- threads of one process ------------------------------------------------------

def test_threads_of_one_process_wait_for_each_other_and_never_fail_busy(settings):
    """A server runs many research runs at once in threads: each waits for
    the others' sessions however long they queue, and the lock timeout
    applies to other processes only."""
    quick = settings.model_copy(update={"lock_timeout": 0.1})
    holding, outcomes = threading.Event(), []

    def hold() -> None:
        with open_catalog(quick, "a long session"):
            holding.set()
            time.sleep(1.0)  # ten lock timeouts: the others queue behind it all along

    def use() -> None:
        try:
            with open_catalog(quick, "a short session") as catalog:
                outcomes.append(catalog.rows("known_tasks"))
        except CatalogBusy as exc:
            outcomes.append(exc)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(60)
    users = [threading.Thread(target=use) for _ in range(8)]
    for thread in users:
        thread.start()
    for thread in [holder, *users]:
        thread.join(120)
    assert outcomes == [[]] * 8


def test_threads_opening_a_fresh_catalog_at_once_all_read_it(settings, tmp_path):
    """A server's first requests (its pages, MCP calls, the look for dead
    runs) open a catalog that does not exist yet, at once: one of them makes
    its tables, the others wait and read it."""
    for attempt in range(4):
        fresh = Settings(home=tmp_path / f"home-{attempt}")  # a catalog that does not exist yet
        start, outcomes = threading.Barrier(4), []

        def read() -> None:
            start.wait()
            try:
                with open_catalog(fresh, "a first request", read_only=True) as catalog:
                    outcomes.append(catalog.rows("known_tasks"))
            except Exception as exc:  # noqa: BLE001 - the test shows what it was
                outcomes.append(exc)

        readers = [threading.Thread(target=read) for _ in range(4)]
        for thread in readers:
            thread.start()
        for thread in readers:
            thread.join(120)
        assert outcomes == [[]] * 4


def test_a_session_opened_inside_the_same_threads_session_is_refused_at_once(settings):
    # waiting for itself would never end
    quick = settings.model_copy(update={"lock_timeout": 0.5})
    with open_catalog(quick, "outer"):
        with pytest.raises(CatalogBusy, match="this thread already holds it"):
            with open_catalog(quick, "inner"):
                pass
    with open_catalog(quick, "after") as catalog:  # and the catalog is free again
        assert catalog.rows("known_tasks") == []

