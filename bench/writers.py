"""The writers part of bench/run.py: several writer processes, each with its
own SEARCHLAKE_HOME, landing disjoint shares of one set of bundles at once
into one shared PostgreSQL catalog (tests/postgres_server.py) and one lake
folder. `bench/run.py --writers 1,2,4` runs it (see its docstring); the
child processes are bench/run.py's `--step write`."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

from bench.steps import cpu_seconds, start_step

WRITERS_4_VS_1_MIN = 1.0


def step_write(home: Path, bundles: Path) -> dict:
    """One of several writers: open the shared catalog (SEARCHLAKE_CATALOG,
    SEARCHLAKE_LAKE from the environment), say so, wait for the start
    signal, land this writer's share."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.lake.landing import land_files

    ready, go = home / "ready", home.parent / "go"
    with open_catalog(Settings(), "bench writer") as catalog:
        ready.touch()
        while not go.exists():
            time.sleep(0.001)
        c0, t1 = cpu_seconds(), time.monotonic()
        report = land_files(catalog, [bundles])
        t2, cpu = time.monotonic(), cpu_seconds()
    return {"started": t1, "ended": t2, "seconds": t2 - t1, "cpu_seconds": cpu - c0,
            "items": report.items_landed, "bundles": len(report.landed), "refused": len(report.refused)}


def _shares(files: list[Path], writers: int, base: Path) -> list[Path]:
    """Disjoint shares of the bundle files, one folder (of hard links) per writer."""
    folders = []
    for w in range(writers):
        folder = base / f"share{w}"
        folder.mkdir(parents=True)
        for path in files[w::writers]:
            os.link(path, folder / path.name)
        folders.append(folder)
    return folders


def run_writers(shares: list[Path], catalog: str, lake: Path, base: Path) -> dict:
    """Start one writer per share, release them together once all have
    opened the catalog, and wait for the last."""
    env = {"SEARCHLAKE_CATALOG": catalog, "SEARCHLAKE_LAKE": str(lake)}
    procs = []
    for w, share in enumerate(shares):
        home = base / f"writer{w}"
        home.mkdir(parents=True)
        procs.append((start_step("write", home, share, base / f"writer{w}.json", env), home))
    while not all((home / "ready").exists() for _, home in procs):
        if any(proc.poll() not in (None, 0) for proc, _ in procs):
            break
        time.sleep(0.005)
    os.sync()
    go = time.monotonic()
    (base / "go").touch()
    codes = [proc.wait() for proc, _ in procs]
    finished = time.monotonic()
    results = []
    for w, code in enumerate(codes):
        result_file = base / f"writer{w}.json"
        results.append(json.loads(result_file.read_text()) if code == 0 and result_file.exists() else None)
    done = [r for r in results if r]
    return {
        "exit_codes": codes,
        "wall_seconds": max(r["ended"] for r in done) - go if done else None,
        "until_exit_seconds": finished - go,
        "late_start_seconds": max(r["started"] for r in done) - go if done else None,
        "writers": results,
    }


def check_lake(catalog: str, lake: Path, home: Path) -> dict:
    """What the shared lake holds after the writers: counts, orphans, quarantine."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.lake.compaction import orphan_table_files

    with open_catalog(Settings(home=home, catalog=catalog, lake=str(lake)), "bench check",
                      read_only=True) as cat:
        q = lambda sql: cat.con.execute(sql).fetchone()  # noqa: E731
        bundles, distinct_queries = q("SELECT count(*), count(DISTINCT query_id) FROM bundles")
        items, distinct_items = q("SELECT count(*), count(DISTINCT (bundle_uid, item_index)) FROM results")
        quarantined = q("SELECT count(*) FROM quarantine")[0]
        snapshots = q("SELECT count(*) FROM lake.snapshots()")[0]
        orphans = orphan_table_files(cat)
    return {"bundles": bundles, "distinct_query_ids": distinct_queries, "results_rows": items,
            "distinct_items": distinct_items, "quarantined": quarantined, "snapshots": snapshots,
            "orphan_table_files": len(orphans)}


def bench_writers(args: argparse.Namespace, scratch: Path) -> dict:
    from bench.generate import generate
    from tests.postgres_server import DURABLE_SETTINGS, FAST_SETTINGS, running_postgres

    counts = [int(c) for c in args.writers.split(",") if c.strip()]
    total = args.writer_items
    base = scratch / "writers"
    print(f"[writers] generating {total:,} items ...", flush=True)
    files = generate(total, base / "bundles", per_bundle=args.items_per_bundle, seed=args.seed)
    settings = DURABLE_SETTINGS if args.pg == "durable" else FAST_SETTINGS
    figures: dict = {"items": total, "bundles": len(files), "postgres": args.pg,
                     "postgres_settings": dict(settings), "trials": args.repeat, "runs": {}}
    with running_postgres(settings=settings) as server:
        for writers in counts:
            shares = _shares(files, writers, base / f"w{writers}")
            trials = []
            for trial in range(args.repeat):
                print(f"[writers] {writers} writer(s), trial {trial + 1} ...", flush=True)
                run_dir = base / f"w{writers}" / f"trial{trial}"
                catalog, lake = server.create_database(), run_dir / "lake"
                _create_schema(catalog, lake, run_dir / "setup")
                run = run_writers(shares, catalog, lake, run_dir)
                run["check"] = check_lake(catalog, lake, run_dir / "setup")
                run["ok"] = _writers_ok(run, len(files), total)
                trials.append(run)
                shutil.rmtree(lake, ignore_errors=True)
            timed = [t for t in trials if t["wall_seconds"]]
            best = dict(min(timed, key=lambda t: t["wall_seconds"])) if timed else dict(trials[0])
            best["trials_wall_seconds"] = [t["wall_seconds"] for t in trials]
            best["all_trials_ok"] = all(t["ok"] for t in trials)
            best["items_per_s"] = total / best["wall_seconds"] if best["wall_seconds"] else 0.0
            figures["runs"][str(writers)] = best
    return figures


def _create_schema(catalog: str, lake: Path, home: Path) -> None:
    """The tables, created once before the writers start (so that the timed
    part is landing, not the race to create the schema)."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog

    with open_catalog(Settings(home=home, catalog=catalog, lake=str(lake)), "bench setup"):
        pass


def _writers_ok(run: dict, bundles: int, items: int) -> bool:
    c = run["check"]
    landed = [r for r in run["writers"] if r]
    return (all(code == 0 for code in run["exit_codes"]) and len(landed) == len(run["writers"])
            and sum(r["items"] for r in landed) == items and not any(r["refused"] for r in landed)
            and c["bundles"] == c["distinct_query_ids"] == bundles
            and c["results_rows"] == c["distinct_items"] == items
            and c["quarantined"] == 0 and c["orphan_table_files"] == 0)


def writer_targets(fig: dict) -> list[tuple[str, bool, str]]:
    runs = fig["runs"]
    if "1" not in runs or "4" not in runs:
        return []
    one, four = runs["1"], runs["4"]
    ratio = four["items_per_s"] / one["items_per_s"] if one["items_per_s"] else 0.0
    return [
        ("4 writers lose nothing", four["all_trials_ok"],
         f"{four['check']['bundles']} bundles, {four['check']['results_rows']:,} rows, "
         f"{four['check']['orphan_table_files']} orphans"),
        ("4 writers >= throughput of 1", ratio >= WRITERS_4_VS_1_MIN,
         f"{ratio:.2f}x ({four['items_per_s']:,.0f} vs {one['items_per_s']:,.0f} items/s)"),
    ]


def print_writers(fig: dict) -> None:
    head = ("writers", "wall s", "items/s", "vs 1", "bundles", "rows", "orphans", "errors", "trials wall s")
    one = fig["runs"].get("1", {}).get("items_per_s")
    rows = []
    for writers, r in fig["runs"].items():
        c = r["check"]
        errors = (sum(code != 0 for code in r["exit_codes"]) + sum(w["refused"] for w in r["writers"] if w)
                  + c["quarantined"])
        rows.append((writers, f"{r['wall_seconds']:.2f}", f"{r['items_per_s']:,.0f}",
                     f"{r['items_per_s'] / one:.2f}x" if one else "-",
                     f"{c['bundles']}/{fig['bundles']}", f"{c['results_rows']:,}/{fig['items']:,}",
                     str(c["orphan_table_files"]), str(errors),
                     ", ".join(f"{t:.2f}" if t else "failed" for t in r["trials_wall_seconds"])))
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    line = "  ".join(h.rjust(w) for h, w in zip(head, widths))
    print(f"\nwriters on one PostgreSQL catalog ({fig['postgres']} settings), {fig['items']:,} items in "
          f"{fig['bundles']} bundles split among the writers; fastest of {fig['trials']} trials")
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    for writers, r in fig["runs"].items():
        per = ", ".join(f"{w['seconds']:.2f}s/cpu {w['cpu_seconds']:.2f}s" for w in r["writers"] if w)
        print(f"  {writers} writer(s): per writer {per}; last started {r['late_start_seconds']:.3f}s after "
              f"the signal; {r['check']['snapshots']} snapshots; every trial checked: {r['all_trials_ok']}")
    print()
    for name, ok, shown in writer_targets(fig):
        print(f"{'writers':>9}  {'met   ' if ok else 'MISSED'}  {name}: {shown}")
