"""A full disk is said as such, and a command's exit status tells the truth
about what committed: a batch that landed is never reported as failed (nor
one that did not as landed), and the lake never holds part of a batch.

The lake lives on a small tmpfs of its own; before each ingest a ballast
file leaves only so much room, from plenty down to none, so that the disk
fills at every stage of a landing: raw files, table files, the catalog's
commit, the catalog's checkpoint as the command lets it go."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog

BUNDLES = 30
ROOM_KB = [1200, 800, 600, 500, 450, 400, 350, 300, 250, 200, 150, 100, 50, 20, 0]


@pytest.fixture
def small_disk(tmp_path):
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill_leaving(disk: Path, room_kb: int) -> Path:
    ballast = disk / "ballast"
    free_kb = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize // 1024
    with open(ballast, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, max(0, free_kb - room_kb) * 1024)
    return ballast


def landed_bundles(home: Path, task_id: str) -> int:
    with open_catalog(Settings(home=home), "test") as catalog:
        return catalog.con.execute("SELECT count(*) FROM bundles WHERE task_id = ?", [task_id]).fetchone()[0]


# What a landing can end in. A SQLite catalog commits into its log, which
# the next open reads; a DuckDB file folds its log into the file as the
# command lets it go, and says so when the disk is too full for that.
OUTCOMES = {"catalog.sqlite": {"landed", "refused"},
            "catalog.ducklake": {"landed", "landed, warned", "refused"}}


@pytest.mark.parametrize("catalog", sorted(OUTCOMES))
def test_a_full_disk_is_said_and_the_exit_status_tells_what_landed(small_disk, cli_at, inbox, new_bundle,
                                                                   new_item, error_lines_of, catalog):
    home = small_disk / "home"
    cli = cli_at(home)
    # a catalog to fill the disk around, the one every later command of the home opens
    assert cli.run("sql", "select 1", SEARCHLAKE_CATALOG=str(home / catalog)).returncode == 0
    outcomes = set()
    for room in ROOM_KB:
        task = f"room{room}"
        folder = inbox.folder / task
        for n in range(BUNDLES):
            items = [new_item(f"https://{task}.example/{n}/{k}", snippet="text " * 40) for k in range(4)]
            inbox.write(new_bundle(f"q{n}", items, task_id=task), f"{task}/q{n}.json")
        ballast = fill_leaving(small_disk, room)
        done = cli.run("ingest", str(folder))
        ballast.unlink()

        landed = landed_bundles(home, task)
        assert landed in (0, BUNDLES), f"{room} KB free: part of a batch landed ({landed})"
        if done.returncode == 0:
            assert landed == BUNDLES, f"{room} KB free: reported landed, but nothing is in the lake"
            outcomes.add("landed, warned" if "warning: the work is committed" in done.stderr else "landed")
        else:
            [line] = error_lines_of(done.stderr)
            assert "the disk is full" in line, done.stderr
            assert landed == 0, f"{room} KB free: reported failed, but the batch landed: {line}"
            outcomes.add("refused")
    assert outcomes == OUTCOMES[catalog], outcomes  # every stage was reached
    assert cli.run("sql", "select count(*) from bundles").returncode == 0  # the lake still opens
