"""Soak: SIGKILL ingest and consolidate at random moments, N times, and check
that every interrupted lake resumes to exactly what an uninterrupted run gives.

    .venv/bin/python bench/soak.py [--rounds 30] [--items 60000] [--per-bundle 500] [--seed 7]

One task of synthetic bundles (bench/generate.py) is written once. A starting
lake holds its even-numbered half, landed and consolidated, so kills also hit
the incremental path. The reference copy of that lake runs
`searchlake ingest ALL && searchlake consolidate --task-id bench` to the end.
Each round copies the starting lake, starts the same two commands (as real
processes, in their own process group), and SIGKILLs the group at a random
moment of one of them: rounds alternate between ingest and consolidate, and
the kill comes a random delay after that command takes the catalog, drawn
from [0, 1.1 x the time it held the catalog in the reference run]. Then the
commands run again to completion and the lake is compared with the reference:

  * the consolidated rows, the cursor (minus its clock), the error log (minus
    its clock), the bundles (query_id, content hash, item count) and the
    results rows (count and distinct (bundle_uid, item_index)) are identical;
  * every table file the current snapshot lists (data and delete files of
    every table) exists on disk, and so does every raw file a bundle names;
  * no stray raw file: every file under raw/ is one a bundle names.

A writer killed before its commit may leave table files that no snapshot
knows (orphans). Nothing reads them; `searchlake compact` deletes them once
they are an hour old. Their count is reported per round, not required to be
zero.

It prints one line per round and the totals (also written to
bench/out/soak.json).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.generate import TASK_ID as TASK, generate  # noqa: E402
from tasks.common.settings import DEFAULT_CATALOG_FILE, Settings  # noqa: E402
from tasks.lake.catalog import open_catalog  # noqa: E402
from tasks.lake.compaction import orphan_table_files  # noqa: E402


HOLDER_FILE = DEFAULT_CATALOG_FILE + ".holder"


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHLAKE_")}
    env["SEARCHLAKE_HOME"] = str(home)
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", *args]


def run(home: Path, *args: str) -> None:
    done = subprocess.run(command(*args), env=environment(home), cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0,):
        raise SystemExit(f"soak: `searchlake {' '.join(args)}` failed:\n{done.stderr}")


def pipeline(home: Path, bundles: Path) -> subprocess.Popen:
    script = (f"{' '.join(map(_quoted, command('ingest', str(bundles))))} && "
              f"{' '.join(map(_quoted, command('consolidate', '--task-id', TASK)))}")
    return subprocess.Popen(["sh", "-c", script], env=environment(home), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _quoted(part: str) -> str:
    return "'" + part.replace("'", "'\\''") + "'"


def holder(home: Path) -> str:
    try:
        return json.loads((home / HOLDER_FILE).read_text())["purpose"]
    except (OSError, ValueError, KeyError):
        return "-"


def outcome(home: Path) -> dict:
    """What a reader of the task sees (minus clocks), and what is left over."""
    with open_catalog(Settings(home=home), "soak", read_only=True) as catalog:
        q = lambda sql: catalog.con.execute(sql).fetchall()  # noqa: E731
        seen = {
            "consolidated": q("SELECT * FROM consolidated ORDER BY final_rank"),
            "cursor": q("SELECT * EXCLUDE (updated_at) FROM search_read_cursor ORDER BY task_id"),
            "error_log": q("SELECT * EXCLUDE (logged_at) FROM error_log ORDER BY ALL"),
            "bundles": q("SELECT query_id, content_hash, item_count FROM bundles ORDER BY ALL"),
            "results": q("SELECT count(*), count(DISTINCT (bundle_uid, item_index)) FROM results"),
            "quarantine": q("SELECT count(*) FROM quarantine"),
        }
        table_files = _snapshot_files(catalog)
        raw = {row[0] for row in q("SELECT raw_path FROM bundles")}
        orphans = orphan_table_files(catalog)
    lake = home / "lake"
    raw_on_disk = {p.relative_to(lake).as_posix() for p in (lake / "raw").rglob("*") if p.is_file()}
    return {
        "seen": seen,
        "orphans": orphans,
        "missing_table_files": sorted(f for f in table_files if not os.path.exists(f)),
        "missing_raw_files": sorted(raw - raw_on_disk),
        "stray_raw_files": sorted(raw_on_disk - raw),
    }


def _snapshot_files(catalog) -> set[str]:
    """The data and delete files of every table in the catalog's current snapshot."""
    tables = [row[0] for row in catalog.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()]
    found: set[str] = set()
    for table in tables:
        for data, deletes in catalog.con.execute(
                "SELECT data_file, delete_file FROM ducklake_list_files('lake', ?)", [table]).fetchall():
            found.add(data)
            if deletes:
                found.add(deletes)
    return found


def phases(home: Path, bundles: Path) -> dict[str, float]:
    """Run the pipeline to the end, timing how long each command held the catalog."""
    (home / HOLDER_FILE).unlink(missing_ok=True)
    proc = pipeline(home, bundles)
    seen: dict[str, float] = {}
    while proc.poll() is None:
        seen.setdefault(holder(home), time.monotonic())
        time.sleep(0.002)
    end = time.monotonic()
    _, err = proc.communicate()
    if proc.returncode != 0 or "ingest" not in seen or "consolidate" not in seen:
        raise SystemExit(f"soak: the uninterrupted run failed:\n{err}")
    return {"ingest": seen["consolidate"] - seen["ingest"], "consolidate": end - seen["consolidate"]}


def kill_round(start: Path, home: Path, bundles: Path, target: str, delay: float) -> dict:
    shutil.copytree(start, home)
    (home / HOLDER_FILE).unlink(missing_ok=True)
    proc = pipeline(home, bundles)
    while proc.poll() is None and holder(home) != target:
        time.sleep(0.002)
    began = time.monotonic()
    while proc.poll() is None and time.monotonic() - began < delay:
        time.sleep(0.002)
    during = holder(home) if proc.poll() is None else "after the end"
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()
    resumed = time.monotonic()
    run(home, "ingest", str(bundles))
    run(home, "consolidate", "--task-id", TASK)
    return {"delay": delay, "during": during, "resume_seconds": time.monotonic() - resumed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--items", type=int, default=60_000)
    parser.add_argument("--per-bundle", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory(prefix="searchlake-soak-") as scratch_dir:
        scratch = Path(scratch_dir)
        every = scratch / "all"
        paths = generate(args.items, every, per_bundle=args.per_bundle, seed=args.seed)
        half = scratch / "half"
        half.mkdir()
        for path in paths[1::2]:
            shutil.copy(path, half / path.name)

        start = scratch / "start"
        run(start, "ingest", str(half))
        run(start, "consolidate", "--task-id", TASK)
        reference = scratch / "reference"
        shutil.copytree(start, reference)
        held = phases(reference, every)
        expected = outcome(reference)
        print(f"{len(paths)} bundles, {args.items:,} items (half already landed); uninterrupted: ingest held the "
              f"catalog {held['ingest']:.2f}s, consolidate {held['consolidate']:.2f}s; "
              f"{len(expected['seen']['consolidated']):,} consolidated sources")

        rounds = []
        for n in range(1, args.rounds + 1):
            home = scratch / f"round{n}"
            target = ("ingest", "consolidate")[n % 2]
            done = kill_round(start, home, every, target, rng.uniform(0, 1.1 * held[target]))
            got = outcome(home)
            done.update(identical=got["seen"] == expected["seen"], orphans=len(got["orphans"]),
                        missing_table_files=len(got["missing_table_files"]),
                        missing_raw_files=len(got["missing_raw_files"]), stray_raw_files=len(got["stray_raw_files"]))
            rounds.append(done)
            verdict = "identical" if done["identical"] else "DIFFERENT"
            print(f"round {n:2d}: killed {done['delay']:5.2f}s into {target:<11} (during {done['during']:<13}) "
                  f"-> {verdict}, "
                  f"orphan table files {done['orphans']}, missing table/raw files {done['missing_table_files']}/"
                  f"{done['missing_raw_files']}, stray raw {done['stray_raw_files']}, "
                  f"resumed in {done['resume_seconds']:.2f}s")
            shutil.rmtree(home)

    killed = [r for r in rounds if r["during"] != "after the end"]
    summary = {
        "rounds": len(rounds),
        "kills_during_ingest": sum(r["during"] == "ingest" for r in rounds),
        "kills_during_consolidate": sum(r["during"] == "consolidate" for r in rounds),
        "runs_ended_before_the_kill": len(rounds) - len(killed),
        "identical": sum(r["identical"] for r in rounds),
        "orphan_table_files": sum(r["orphans"] for r in rounds),
        "rounds_with_orphans": sum(bool(r["orphans"]) for r in rounds),
        "missing_table_files": sum(r["missing_table_files"] for r in rounds),
        "missing_raw_files": sum(r["missing_raw_files"] for r in rounds),
        "stray_raw_files": sum(r["stray_raw_files"] for r in rounds),
        "ingest_seconds": round(held["ingest"], 2),
        "consolidate_seconds": round(held["consolidate"], 2),
        "items": args.items,
    }
    print()
    for key, value in summary.items():
        print(f"{key.replace('_', ' '):>28}: {value}")
    OUT.mkdir(exist_ok=True)
    (OUT / "soak.json").write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2))
    ok = summary["identical"] == len(rounds) and not (summary["missing_table_files"] or summary["missing_raw_files"]
                                                      or summary["stray_raw_files"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
