"""Two searchlake processes on one lake at the same moment: the second waits
its turn, or says plainly that the catalog is busy."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

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


@pytest.mark.parametrize("command", [["ingest", "{inbox}"], ["consolidate", "--task-id", "t1"],
                                     ["sql", "select count(*) from bundles"]])
def test_a_busy_catalog_is_reported_plainly(cli, lake, inbox, new_bundle, new_item, hold_catalog,
                                            error_lines_of, command):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    holder = hold_catalog()
    args = [arg.format(inbox=inbox.folder) for arg in command]

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
