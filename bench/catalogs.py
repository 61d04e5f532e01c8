"""Benchmark: the embedded catalog in SQLite against a DuckDB file, in one run.

    .venv/bin/python bench/catalogs.py [--items 100000] [--repeat 3] [--opens 15]
                                       [--read-every 2] [--lock-timeout 10] [--seed 7] [--keep]

Both catalogs hold the same lake layout; a home's catalog is chosen with
SEARCHLAKE_CATALOG (catalog.sqlite or catalog.ducklake in the home). For
each, on the bundles bench/generate.py writes (--items items):

  reader     a separate process (plain DuckDB, DuckLake and SQLite
             extensions, no searchlake code) ATTACHes the catalog READ_ONLY
             after a first landing of two bundles, then runs a query every
             --read-every seconds for the whole test, while searchlake
             ingests the bundle files and consolidates, each a child process
             (bench/run.py's steps) with SEARCHLAKE_LOCK_TIMEOUT=--lock-timeout.
             Recorded: whether each step succeeded, its wall time (what it
             waited included), and the reader's queries (run, failed).
  open       a command's cost to open the catalog: open_catalog (extensions,
             attach, schema check, views) plus a first query, timed inside a
             child process (imports excluded), and the whole `searchlake sql`
             process; the median of --opens runs of each, on a landed lake.
  ingest,    bench/run.py's steps on fresh homes, --repeat trials each, the
  consolidate  two catalogs' trials interleaved; the fastest trial counts.

The ratios (SQLite / DuckDB file) go to stdout and, with every figure, to
bench/out/catalogs.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.steps import OUT, link_copy, run_step, start_step  # noqa: E402

CATALOGS = {"sqlite": "catalog.sqlite", "duckdb_file": "catalog.ducklake"}
FIRST_BUNDLES = 2  # landed first, so that the reader has a catalog to attach


def catalog_env(kind: str, home: Path) -> dict[str, str]:
    return {"SEARCHLAKE_CATALOG": str(home / CATALOGS[kind])}


# ---------------------------------------------------------------------------
# child side


def step_open(home: Path, bundles: Path) -> dict:
    """open_catalog plus a first query, as a command pays them."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog

    t0 = time.perf_counter()
    with open_catalog(Settings(), "bench open", read_only=True) as catalog:
        rows = catalog.con.execute("SELECT count(*) FROM bundles").fetchone()[0]
        t1 = time.perf_counter()
    return {"seconds": t1 - t0, "bundles": rows}


def reader_main(catalog: str, every: float, log: Path, stop: Path) -> int:
    """The outside reader: attach READ_ONLY, then one query every `every`
    seconds until `stop` exists; one JSON line per query in `log`."""
    from tests.outside_reader import outside_connection

    con = outside_connection(catalog, log.parent / "reader-extensions")
    with log.open("w") as out:
        out.write(json.dumps({"attached": time.time()}) + "\n")
        out.flush()
        while not stop.exists():
            t0 = time.perf_counter()
            try:
                rows = con.execute("SELECT count(*) FROM lake.results").fetchone()[0]
                line = {"rows": rows}
            except Exception as exc:  # every failure is a figure here
                line = {"error": " ".join(str(exc).split())[:200]}
            line["seconds"] = time.perf_counter() - t0
            out.write(json.dumps(line) + "\n")
            out.flush()
            time.sleep(every)
    return 0


# ---------------------------------------------------------------------------
# parent side


def run_step_once(step: str, home: Path, bundles: Path, workdir: Path, env: dict[str, str]) -> dict:
    """A step that may fail (a catalog held by the reader): its exit code,
    wall time and last error line, and its figures when it succeeded."""
    result_file = workdir / f"{step}-{home.name}.json"
    t0 = time.perf_counter()
    proc = start_step(step, home, bundles, result_file, env)
    proc.wait()
    wall = time.perf_counter() - t0
    outcome = {"exit_code": proc.returncode, "wall_seconds": wall}
    if proc.returncode == 0:
        outcome.update(json.loads(result_file.read_text()))
    return outcome


def first_bundles(bundles: Path, folder: Path) -> Path:
    """The first FIRST_BUNDLES bundle files (links): the later ingest of all
    of them finds these unchanged."""
    folder.mkdir()
    for path in sorted(bundles.iterdir(), key=lambda p: int(p.stem.lstrip("q")))[:FIRST_BUNDLES]:
        os.link(path, folder / path.name)
    return folder


def first_landing(home: Path, small: Path, workdir: Path, env: dict[str, str]) -> None:
    run_step("ingest", home, small, workdir, env)


def bench_reader(kind: str, args: argparse.Namespace, base: Path, bundles: Path, small: Path) -> dict:
    home, workdir = base / f"reader-{kind}", base / "work"
    env = catalog_env(kind, home)
    first_landing(home, small, workdir, env)
    log, stop = workdir / f"reader-{kind}.jsonl", workdir / f"stop-{kind}"
    location = ("sqlite:" if kind == "sqlite" else "") + env["SEARCHLAKE_CATALOG"]
    reader = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--reader", location,
                               "--read-every", str(args.read_every), "--log", str(log), "--stop", str(stop)],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    while not (log.exists() and log.read_text()):
        if reader.poll() is not None:
            raise SystemExit(f"the reader of the {kind} catalog did not start")
        time.sleep(0.05)
    env = {**env, "SEARCHLAKE_LOCK_TIMEOUT": str(args.lock_timeout)}
    steps = {step: run_step_once(step, home, bundles, workdir, env) for step in ("ingest", "consolidate")}
    time.sleep(args.read_every)  # one more read after the writer
    stop.touch()
    reader.wait(timeout=60)
    reads = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    failed = [r["error"] for r in reads if "error" in r]
    return {"steps": steps, "reads": len(reads), "reads_failed": len(failed),
            "read_errors": sorted(set(failed))[:3], "rows_seen_last": reads[-1].get("rows") if reads else None,
            "slowest_read_seconds": max((r["seconds"] for r in reads), default=None)}


def bench_open(kind: str, home: Path, workdir: Path, runs: int) -> dict:
    env = catalog_env(kind, home)
    inside = [run_step("open", home, workdir, workdir, env)["seconds"] for _ in range(runs)]
    command = [sys.executable, "-m", "flows.cli", "sql", "select count(*) from bundles"]
    whole = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True,
                       env={**{k: v for k, v in os.environ.items() if not k.startswith("SEARCHLAKE_")},
                            "SEARCHLAKE_HOME": str(home), **env})
        whole.append(time.perf_counter() - t0)
    return {"open_and_first_query_seconds": statistics.median(inside), "sql_command_seconds": statistics.median(whole),
            "open_trials": inside, "sql_trials": whole}


def bench_speed(args: argparse.Namespace, base: Path, bundles: Path) -> dict:
    """Ingest, then consolidate on fresh copies of the landed lake, each
    catalog's trials interleaved with the other's; the fastest counts."""
    workdir = base / "work"
    trials: dict[str, dict[str, list[dict]]] = {kind: {"ingest": [], "consolidate": []} for kind in CATALOGS}
    landed: dict[str, Path] = {}
    for trial in range(args.repeat):
        for kind in CATALOGS:
            home = base / f"ingest-{kind}-{trial}"
            trials[kind]["ingest"].append(run_step("ingest", home, bundles, workdir, catalog_env(kind, home)))
            landed.setdefault(kind, home)
    for trial in range(args.repeat):
        for kind in CATALOGS:
            home = base / f"cons-{kind}-{trial}"
            link_copy(landed[kind], home)
            trials[kind]["consolidate"].append(run_step("consolidate", home, bundles, workdir,
                                                        catalog_env(kind, home)))
    figures = {}
    for kind, steps in trials.items():
        figures[kind] = {step: {"seconds": min(r["seconds"] for r in runs),
                                "trials_seconds": [r["seconds"] for r in runs],
                                "items": runs[0]["items"]} for step, runs in steps.items()}
        if figures[kind]["ingest"]["items"] != args.items:
            raise SystemExit(f"{kind}: ingest landed {figures[kind]['ingest']['items']} of {args.items} items")
    return figures


def ratios(figures: dict) -> dict:
    sqlite, duck = figures["speed"]["sqlite"], figures["speed"]["duckdb_file"]
    opened = figures["open"]
    return {
        "ingest": sqlite["ingest"]["seconds"] / duck["ingest"]["seconds"],
        "consolidate": sqlite["consolidate"]["seconds"] / duck["consolidate"]["seconds"],
        "open_and_first_query": (opened["sqlite"]["open_and_first_query_seconds"]
                                 / opened["duckdb_file"]["open_and_first_query_seconds"]),
        "sql_command": opened["sqlite"]["sql_command_seconds"] / opened["duckdb_file"]["sql_command_seconds"],
        "ingest_with_reader_vs_without": {
            kind: (figures["reader"][kind]["steps"]["ingest"]["seconds"] / figures["speed"][kind]["ingest"]["seconds"]
                   if figures["reader"][kind]["steps"]["ingest"]["exit_code"] == 0 else None)
            for kind in CATALOGS},
    }


def print_figures(doc: dict) -> None:
    print()
    print(f"{'':34}{'SQLite':>14}{'DuckDB file':>14}{'ratio':>9}")
    speed, opened, r = doc["speed"], doc["open"], doc["ratios"]

    def row(name: str, a: float, b: float, ratio: float, unit: str = "s") -> None:
        print(f"{name:34}{a:>13.3f}{unit}{b:>13.3f}{unit}{ratio:>8.2f}x")

    row(f"ingest {doc['items']:,} items", speed["sqlite"]["ingest"]["seconds"],
        speed["duckdb_file"]["ingest"]["seconds"], r["ingest"])
    row("consolidate", speed["sqlite"]["consolidate"]["seconds"], speed["duckdb_file"]["consolidate"]["seconds"],
        r["consolidate"])
    row("open + first query (median)", opened["sqlite"]["open_and_first_query_seconds"],
        opened["duckdb_file"]["open_and_first_query_seconds"], r["open_and_first_query"])
    row("`searchlake sql` process (median)", opened["sqlite"]["sql_command_seconds"],
        opened["duckdb_file"]["sql_command_seconds"], r["sql_command"])
    print()
    for kind, reader in doc["reader"].items():
        print(f"with a reader attached ({kind}): {reader['reads']} reads, {reader['reads_failed']} failed; "
              f"last read saw {reader['rows_seen_last']} rows")
        for step, outcome in reader["steps"].items():
            if outcome["exit_code"] == 0:
                print(f"  {step:<12} succeeded: {outcome['wall_seconds']:.1f}s in all, {outcome['seconds']:.2f}s of "
                      f"work, {outcome['open_seconds']:.2f}s to open the catalog")
            else:
                print(f"  {step:<12} FAILED (exit {outcome['exit_code']}) after {outcome['wall_seconds']:.1f}s")
    print(f"\nload average {doc['loadavg_before'][0]:.1f} before, {doc['loadavg_after'][0]:.1f} after")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SQLite against DuckDB-file catalogs")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--items-per-bundle", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="ingest/consolidate trials per catalog")
    parser.add_argument("--opens", type=int, default=15, help="runs of each open measurement (median)")
    parser.add_argument("--read-every", type=float, default=2.0, help="seconds between the reader's queries")
    parser.add_argument("--lock-timeout", type=float, default=10.0,
                        help="SEARCHLAKE_LOCK_TIMEOUT of the steps that run beside the reader")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument("--reader", help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stop", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reader:
        return reader_main(args.reader, args.read_every, args.log, args.stop)
    from bench.generate import generate

    scratch = Path(tempfile.mkdtemp(prefix="searchlake-catalogs-"))
    try:
        (scratch / "work").mkdir()
        load_before = os.getloadavg()
        print(f"generating {args.items:,} items ...", flush=True)
        bundles = scratch / "bundles"
        generate(args.items, bundles, per_bundle=args.items_per_bundle, seed=args.seed)
        small = first_bundles(bundles, scratch / "small")
        doc: dict = {"items": args.items, "repeat": args.repeat, "opens": args.opens,
                     "read_every": args.read_every, "lock_timeout": args.lock_timeout,
                     "loadavg_before": load_before}
        print("reader beside ingest + consolidate ...", flush=True)
        doc["reader"] = {kind: bench_reader(kind, args, scratch, bundles, small) for kind in CATALOGS}
        print("ingest and consolidate ...", flush=True)
        doc["speed"] = bench_speed(args, scratch, bundles)
        print("opening ...", flush=True)
        doc["open"] = {}
        for kind in CATALOGS:
            doc["open"][kind] = bench_open(kind, scratch / f"cons-{kind}-0", scratch / "work", args.opens)
        doc["loadavg_after"] = os.getloadavg()
        doc["ratios"] = ratios(doc)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"kept {scratch}")
    print_figures(doc)
    doc["command"] = " ".join([".venv/bin/python", "bench/catalogs.py", *(argv if argv is not None else sys.argv[1:])])
    doc["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    OUT.mkdir(exist_ok=True)
    (OUT / "catalogs.json").write_text(json.dumps(doc, indent=2))
    print(f"\nwrote {OUT / 'catalogs.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
