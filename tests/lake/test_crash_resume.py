"""A run killed at any instant resumes with nothing lost and nothing doubled.

A task of a few hundred bundles with overlapping URLs is big enough that
ingest and consolidate each take a noticeable time. `searchlake ingest` then
`searchlake consolidate` run as real processes and get SIGKILLed at instants
spread over both steps; after each kill the same commands run again to
completion, and the lake must hold exactly what an uninterrupted run in a
separate lake holds.

The starting lake already holds half of the task, consolidated, so a kill can
land in the incremental path (earlier output merged with late bundles whose
query_id sorts before the cursor), not only in a first read.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tasks.common.settings import Settings

TASK = "big"
BUNDLES = 150
ITEMS = 100


def write_task(folder: Path) -> None:
    """BUNDLES bundles of ITEMS items drawn from a pool of URLs small enough
    that most sources are seen several times; a few failed and filtered."""
    rng = random.Random(20260301)
    pool = [f"https://site{n % 97}.example/page/{n}" for n in range(BUNDLES * ITEMS // 4)]
    folder.mkdir(parents=True)
    for q in range(1, BUNDLES + 1):
        items = [random_item(rng, pool, rank) for rank in range(1, ITEMS + 1)]
        bundle = {"task_id": TASK, "query_id": f"q{q}", "query_text": f"question {q}", "provider": "gen",
                  "executed_at": "2026-03-01T11:00:00Z", "results": items}
        (folder / f"q{q}.json").write_text(json.dumps(bundle))


def random_item(rng: random.Random, pool: list[str], rank: int) -> dict:
    url = rng.choice(pool) + ("?utm_source=feed" if rng.random() < 0.2 else "")
    item = {"url": url, "title": f"page {url}", "rank": rank, "captured_at": "2026-03-01T12:00:00Z",
            # two decimals: plenty of equal scores, so the tie-breaks matter
            "score_final": round(rng.random(), 2), "status": "ok"}
    fate = rng.random()
    if fate < 0.03:
        item.update(status="failed", error_code=rng.choice(["timeout", "blocked"]))
    elif fate < 0.06:
        item["status"] = "filtered"
    return item


@pytest.fixture(scope="module")
def task_files(tmp_path_factory) -> tuple[Path, Path]:
    """(every bundle, the even-numbered half that the starting lake holds)."""
    base = tmp_path_factory.mktemp("crash-task")
    write_task(base / "all")
    (base / "even").mkdir()
    for q in range(2, BUNDLES + 1, 2):
        shutil.copy(base / "all" / f"q{q}.json", base / "even" / f"q{q}.json")
    return base / "all", base / "even"


def outcome(lake) -> dict:
    """Everything a reader of the task can see, minus wall-clock stamps."""
    return {
        "consolidated": lake.rows("SELECT * FROM consolidated ORDER BY final_rank"),
        "cursor": lake.rows("SELECT * EXCLUDE (updated_at) FROM search_read_cursor ORDER BY task_id"),
        "error_log": lake.rows("SELECT * EXCLUDE (logged_at) FROM error_log ORDER BY ALL"),
        "bundles": lake.rows("SELECT query_id, content_hash, item_count FROM bundles ORDER BY ALL"),
        "results": lake.rows("SELECT count(*), count(DISTINCT (bundle_uid, item_index)) FROM results"),
        "quarantine": lake.count("quarantine"),
    }


def shell_line(cli, *args: str) -> str:
    return " ".join(shlex.quote(part) for part in cli.command(*args))


class Moments:
    """What a run is doing right now, read from the files it leaves in its
    home: which command holds the catalog, and whether it has begun writing
    table files. Kill instants are tied to these moments rather than to the
    clock, so they land inside each step whatever the machine's load."""

    def __init__(self, home: Path):
        catalog = Settings(home=home).catalog_path
        self.holder_file = catalog.with_name(catalog.name + ".holder")
        self.lake = home / "lake"
        self.holder_file.unlink(missing_ok=True)  # the copied lake's last holder is history
        self.files_before = {table: self._files(table) for table in ("results", "consolidated")}

    def _files(self, table: str) -> set[Path]:
        return set((self.lake / "tables" / "main" / table).rglob("*.parquet"))

    def holder(self) -> str | None:
        try:
            return json.loads(self.holder_file.read_text())["purpose"]
        except (OSError, ValueError, KeyError):
            return None

    def writing(self, table: str) -> bool:
        """A new file of the table appeared (committed or not yet)."""
        return bool(self._files(table) - self.files_before[table])

    def raw_written(self, query_id: str) -> bool:
        return (self.lake / "raw" / f"task_id={TASK}" / f"query_id={query_id}").is_dir()


# (what the run is doing, seconds to wait once it does it); q1 is in the half
# that the starting lake lacks, so its raw file appears when ingest writes.
KILL_MOMENTS = [
    ("ingest has the catalog", lambda m: m.holder() == "ingest", 0.0),
    ("ingest validates", lambda m: m.holder() == "ingest", 0.3),
    ("ingest writes raw files", lambda m: m.raw_written("q1"), 0.0),
    ("ingest writes its table files", lambda m: m.writing("results"), 0.0),
    ("ingest nears its commit", lambda m: m.writing("results"), 0.05),
    ("consolidate has the catalog", lambda m: m.holder() == "consolidate", 0.05),
    ("consolidate reads", lambda m: m.holder() == "consolidate", 0.1),
    ("consolidate writes its output", lambda m: m.writing("consolidated"), 0.0),
    ("consolidate nears its commit", lambda m: m.writing("consolidated"), 0.05),
]


class Pipeline:
    """`searchlake ingest ALL && searchlake consolidate` for one lake."""

    def __init__(self, cli, folder: Path):
        self.cli = cli
        self.script = " && ".join([shell_line(cli, "ingest", str(folder)),
                                   shell_line(cli, "consolidate", "--task-id", TASK)])

    def start(self) -> subprocess.Popen:
        # Its own process group, so one SIGKILL reaches whichever step is running.
        return subprocess.Popen(["sh", "-c", self.script], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=self.cli.env(),
                                cwd=self.cli.cwd, start_new_session=True)

    def run_to_completion(self) -> None:
        proc = self.start()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "Traceback" not in err

    def kill_at(self, moment, wait: float) -> bool:
        """Start, SIGKILL `wait` seconds after `moment` holds; True when the
        kill hit a live run (False: it ended before the moment came)."""
        moments = Moments(Path(self.cli.home))
        proc = self.start()
        while proc.poll() is None and not moment(moments):
            time.sleep(0.002)
        time.sleep(wait)
        running = proc.poll() is None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended first: nothing left to kill
            pass
        proc.communicate(timeout=30)
        return running


def run_ok(cli, *args: str) -> None:
    done = cli.run(*args)
    assert done.returncode == 0, done.stderr


def test_killed_runs_resume_to_the_uninterrupted_result(task_files, tmp_path, cli_at, lake_at):
    every, even = task_files
    start = tmp_path / "start"  # half the task landed and consolidated
    cli = cli_at(start)
    run_ok(cli, "ingest", str(even))
    run_ok(cli, "consolidate", "--task-id", TASK)

    reference = tmp_path / "reference"
    shutil.copytree(start, reference)
    run_ok(cli_at(reference), "ingest", str(every))
    run_ok(cli_at(reference), "consolidate", "--task-id", TASK)
    expected = outcome(lake_at(reference))
    assert len(expected["bundles"]) == BUNDLES
    assert expected["results"] == [(BUNDLES * ITEMS, BUNDLES * ITEMS)]

    hits = []
    for n, (name, moment, wait) in enumerate(KILL_MOMENTS):
        home = tmp_path / f"killed-{n}"
        shutil.copytree(start, home)
        pipeline = Pipeline(cli_at(home), every)
        if pipeline.kill_at(moment, wait):
            hits.append(name)
        pipeline.run_to_completion()
        lake = lake_at(home)
        assert outcome(lake) == expected, f"killed when {name}"
        # A kill before the commit may leave table files no snapshot knows: never read, deleted by `compact`.
        stray = lake.orphan_table_files()
        assert all("/tables/main/" in path for path in stray), stray
    # A short moment can slip by between two looks; most must be caught.
    assert len(hits) >= len(KILL_MOMENTS) - 3, hits
