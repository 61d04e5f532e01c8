"""Benchmark: landing and consolidating one task of N synthetic items, and
several writers landing at once on a shared PostgreSQL catalog.

    .venv/bin/python bench/run.py [--sizes 100000,1000000] [--repeat 3] [--seed 7] [--keep]
                                  [--writers 1,2,4] [--writer-items 200000] [--pg durable|fast]

For each size: generate the bundle files (bench/generate.py) into a temp
dir, then, each in its own child process with a fresh SEARCHLAKE_HOME and
the embedded catalog (catalog.sqlite; bench/catalogs.py compares it with a DuckDB file):
  ingest         tasks.lake.landing.land_files under tasks.lake.catalog.open_catalog
  consolidate    tasks.lake.consolidation.consolidate (first run: reads everything)
  reconsolidate  the same with nothing new landed
  baseline       a bare duckdb.connect() query doing the same dedup + rank over
                 the landed results Parquet files (the files the catalog's
                 current snapshot lists for `results`, found before the timed
                 part; a plain ingest leaves no delete files), written with
                 COPY ... TO
The consolidated table, read through the catalog, must equal the baseline's
output.

Writers: --writer-items items (the same total for every writer count) are
split by bundle into as many disjoint shares as there are writers. For each
writer count, a fresh database on one throwaway PostgreSQL server
(tests/postgres_server.py; --pg durable keeps PostgreSQL's own fsync
settings and is the default, --pg fast turns fsync off) is the shared
SEARCHLAKE_CATALOG and one folder the shared SEARCHLAKE_LAKE; each writer is
a child process with its own SEARCHLAKE_HOME that opens the catalog, waits
for the common start signal, then lands its share. Wall time runs from the
start signal to the end of the last writer's land_files. Afterwards the
lake must hold exactly the generated bundles and items, no orphan table
file (tasks.lake.compaction.orphan_table_files), nothing quarantined, and
every writer must have exited cleanly with nothing refused.
Times are wall-clock seconds of the call itself inside the child: land_files,
consolidate, or the baseline's connect + COPY (imports, interpreter start-up
and opening the catalog excluded; the catalog open, about the same for every
command, is recorded as open_seconds and with_catalog_seconds); each step runs
--repeat times (default 3; consolidate on fresh copies of the landed lake)
and the fastest trial counts, since other processes may share the machine.
CPU seconds (the step's and its workers') are recorded too. Peak memory is
the child's resource.getrusage ru_maxrss (RUSAGE_SELF plus RUSAGE_CHILDREN
for the worker processes landing forks: an upper bound), or the sampled peak
of the process tree's PSS from /proc if that is larger.
Figures go to stdout and to bench/out/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.steps import OUT, cpu_seconds, link_copy, run_step  # noqa: E402

TASK = "bench"
TARGETS = {
    "consolidate_vs_baseline_max": 1.5,
    "consolidate_items_per_s_min": 500_000,
    "ingest_items_per_s_min": 100_000,
    "reconsolidate_pct_max": 5.0,
    "peak_rss_mb_max": 2048,
}

# ---------------------------------------------------------------------------
# child side: one measured step


BASELINE_SQL = """
COPY (
    WITH ok AS (
        SELECT * FROM read_parquet({files}) WHERE status = 'ok'
    ),
    winners AS (
        SELECT *, count(*) OVER (PARTITION BY source_id) AS seen_count
        FROM ok
        QUALIFY row_number() OVER (
            PARTITION BY source_id
            ORDER BY query_sort_key, query_id, score_final DESC, rank NULLS LAST, item_index) = 1
    )
    SELECT task_id, source_id,
           row_number() OVER (ORDER BY score_final DESC, rank NULLS LAST, source_id) AS final_rank,
           seen_count, query_id, query_text, query_intent, provider, rank, url, title,
           snippet, content_text, language, published_at, captured_at, http_status,
           score_relevance, score_freshness, score_authority, score_final
    FROM winners
    ORDER BY final_rank
) TO {out} (FORMAT parquet)
"""


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _settings(home: Path):
    from tasks.common.settings import Settings

    return Settings(home=home)


def results_files(home: Path) -> list[str]:
    """The Parquet files of the `results` table in the catalog's current
    snapshot (what the bare baseline reads), with their row count checked
    against the table's: no row may live in a delete file or inlined in the catalog."""
    from tasks.lake.catalog import open_catalog

    with open_catalog(_settings(home), "bench file list", read_only=True) as catalog:
        listed = catalog.con.execute(
            "SELECT data_file, delete_file FROM ducklake_list_files('lake', 'results')").fetchall()
        rows = catalog.con.execute("SELECT count(*) FROM results").fetchone()[0]
        files = sorted(data for data, _ in listed)
        in_files = catalog.con.execute("SELECT count(*) FROM read_parquet(?)", [files]).fetchone()[0]
    if any(deletes for _, deletes in listed) or in_files != rows:
        raise SystemExit(f"results: {rows} rows, {in_files} in its data files, "
                         f"{sum(bool(d) for _, d in listed)} delete files: the bare baseline would differ")
    return files


def step_ingest(home: Path, bundles: Path) -> dict:
    from tasks.lake.catalog import open_catalog
    from tasks.common.settings import Settings
    from tasks.lake.landing import land_files

    t0 = time.perf_counter()
    with open_catalog(Settings(), "bench ingest") as catalog:
        c0, t1 = cpu_seconds(), time.perf_counter()
        report = land_files(catalog, [bundles])
        t2, cpu = time.perf_counter(), cpu_seconds()
    t3 = time.perf_counter()
    return {"seconds": t2 - t1, "cpu_seconds": cpu - c0, "with_catalog_seconds": t3 - t0, "open_seconds": t1 - t0,
            "items": report.items_landed, "bundles": len(report.landed),
            "refused": len(report.refused)}


def step_consolidate(home: Path, bundles: Path) -> dict:
    from tasks.lake.catalog import open_catalog
    from tasks.common.settings import Settings
    from tasks.lake.consolidation import consolidate

    t0 = time.perf_counter()
    with open_catalog(Settings(), "bench consolidate") as catalog:
        c0, t1 = cpu_seconds(), time.perf_counter()
        report = consolidate(catalog, TASK)
        t2, cpu = time.perf_counter(), cpu_seconds()
    t3 = time.perf_counter()
    return {"seconds": t2 - t1, "cpu_seconds": cpu - c0, "with_catalog_seconds": t3 - t0, "open_seconds": t1 - t0,
            "items": report.items_read, "bundles": report.bundles_read,
            "sources": report.sources_written, "failed_logged": report.failed_logged,
            "nothing_new": report.nothing_new}


def step_baseline(home: Path, bundles: Path) -> dict:
    import duckdb

    files = json.loads((home / "results_files.json").read_text())
    out = home / "baseline.parquet"
    c0, t0 = cpu_seconds(), time.perf_counter()
    con = duckdb.connect()
    query = BASELINE_SQL.format(files="[" + ", ".join(_sql_text(f) for f in files) + "]",
                                out=_sql_text(str(out)))
    con.execute(query)
    con.close()
    t1 = time.perf_counter()
    cpu = cpu_seconds() - c0
    sources = duckdb.connect().execute(f"SELECT count(*) FROM read_parquet({_sql_text(str(out))})").fetchone()[0]
    return {"seconds": t1 - t0, "cpu_seconds": cpu, "with_catalog_seconds": t1 - t0, "open_seconds": 0.0,
            "sources": sources, "files": len(files)}


# ---------------------------------------------------------------------------
# parent side


def best_of(step: str, trials: int, home_for, bundles: Path, workdir: Path) -> tuple[dict, Path]:
    """Run a step `trials` times (each on home_for(i)); the fastest trial's
    figures, with every trial's seconds kept, and that trial's home."""
    runs = []
    for i in range(trials):
        home = home_for(i)
        runs.append((run_step(step, home, bundles, workdir), home))
    best, home = min(runs, key=lambda r: r[0]["seconds"])
    best = dict(best)
    best["trials_seconds"] = [r["seconds"] for r, _ in runs]
    best["trials_cpu_seconds"] = [r["cpu_seconds"] for r, _ in runs]
    best["peak_rss_mb"] = max(r["peak_rss_mb"] for r, _ in runs)
    return best, home


def check_same_output(home: Path) -> dict:
    """The consolidated table (read through the catalog) and the baseline's
    output agree on every winner and rank."""
    from tasks.lake.catalog import open_catalog

    base = _sql_text(str(home / "baseline.parquet"))
    cols = "source_id, final_rank, seen_count, query_id, rank, url, title, snippet, score_final"
    with open_catalog(_settings(home), "bench check", read_only=True) as catalog:
        diff = catalog.con.execute(f"""
            SELECT (SELECT count(*) FROM (SELECT {cols} FROM consolidated WHERE task_id = '{TASK}'
                                          EXCEPT ALL SELECT {cols} FROM read_parquet({base}))),
                   (SELECT count(*) FROM (SELECT {cols} FROM read_parquet({base})
                                          EXCEPT ALL SELECT {cols} FROM consolidated WHERE task_id = '{TASK}'))
        """).fetchone()
    return {"rows_only_in_consolidated": diff[0], "rows_only_in_baseline": diff[1],
            "identical": diff == (0, 0)}


def bench_size(items: int, args: argparse.Namespace, scratch: Path) -> dict:
    from bench.generate import generate

    base = scratch / f"n{items}"
    bundles, workdir = base / "bundles", base / "work"
    workdir.mkdir(parents=True)
    load_before = os.getloadavg()
    print(f"[{items:,} items] generating ...", flush=True)
    t0 = time.perf_counter()
    files = generate(items, bundles, per_bundle=args.items_per_bundle, seed=args.seed)
    gen_seconds = time.perf_counter() - t0
    input_mb = sum(p.stat().st_size for p in files) / 2**20
    n = args.repeat
    print(f"[{items:,} items] ingest x{n} ...", flush=True)
    ingest, landed = best_of("ingest", n, lambda i: base / f"ingest{i}", bundles, workdir)
    for i in range(n):  # keep only the lake the other steps start from
        if base / f"ingest{i}" != landed:
            shutil.rmtree(base / f"ingest{i}", ignore_errors=True)

    def fresh_copy(i: int) -> Path:
        home = base / f"cons{i}"
        link_copy(landed, home)
        return home

    print(f"[{items:,} items] consolidate x{n} ...", flush=True)
    cons, consolidated = best_of("consolidate", n, fresh_copy, bundles, workdir)
    print(f"[{items:,} items] re-consolidate x{n} ...", flush=True)
    recons, _ = best_of("reconsolidate", n, lambda i: consolidated, bundles, workdir)
    print(f"[{items:,} items] baseline x{n} ...", flush=True)
    (consolidated / "results_files.json").write_text(json.dumps(results_files(consolidated)))
    baseline, _ = best_of("baseline", n, lambda i: consolidated, bundles, workdir)
    if ingest["items"] != items or ingest["refused"]:
        raise SystemExit(f"ingest landed {ingest['items']} of {items} items, refused {ingest['refused']}")
    if recons["nothing_new"] is not True:
        raise SystemExit("re-consolidation read something new")
    agreement = check_same_output(consolidated)
    figures = {
        "items": items,
        "bundles": len(files),
        "input_mb": round(input_mb, 1),
        "generate_seconds": round(gen_seconds, 2),
        "trials": n,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "ingest_items_per_s": items / ingest["seconds"],
        "consolidate_items_per_s": items / cons["seconds"],
        "consolidate_vs_baseline": cons["seconds"] / baseline["seconds"],
        "reconsolidate_pct_of_first": 100 * recons["seconds"] / cons["seconds"],
        "peak_rss_mb_ingest": ingest["peak_rss_mb"],
        "peak_rss_mb_consolidate": cons["peak_rss_mb"],
        "peak_rss_mb_baseline": baseline["peak_rss_mb"],
        "sources": cons["sources"],
        "baseline_sources": baseline["sources"],
        "output_matches_baseline": agreement,
        "steps": {"ingest": ingest, "consolidate": cons, "reconsolidate": recons, "baseline": baseline},
    }
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return figures


def targets_for(fig: dict) -> list[tuple[str, bool, str]]:
    t = TARGETS
    return [
        ("consolidate <= 1.5x bare query", fig["consolidate_vs_baseline"] <= t["consolidate_vs_baseline_max"],
         f"{fig['consolidate_vs_baseline']:.2f}x"),
        ("consolidate >= 500k items/s", fig["consolidate_items_per_s"] >= t["consolidate_items_per_s_min"],
         f"{fig['consolidate_items_per_s']:,.0f} items/s"),
        ("ingest >= 100k items/s", fig["ingest_items_per_s"] >= t["ingest_items_per_s_min"],
         f"{fig['ingest_items_per_s']:,.0f} items/s"),
        ("re-consolidate <= 5% of first", fig["reconsolidate_pct_of_first"] <= t["reconsolidate_pct_max"],
         f"{fig['reconsolidate_pct_of_first']:.1f}%"),
        ("peak memory < 2 GB", max(fig["peak_rss_mb_ingest"], fig["peak_rss_mb_consolidate"]) < t["peak_rss_mb_max"],
         f"{max(fig['peak_rss_mb_ingest'], fig['peak_rss_mb_consolidate']):,.0f} MB"),
    ]


def print_table(results: list[dict]) -> None:
    head = ("size", "ingest items/s", "consolidate items/s", "cons/baseline",
            "re-cons % of 1st", "ingest peak MB", "cons peak MB")
    rows = [(f"{r['items']:,}", f"{r['ingest_items_per_s']:,.0f}", f"{r['consolidate_items_per_s']:,.0f}",
             f"{r['consolidate_vs_baseline']:.2f}x", f"{r['reconsolidate_pct_of_first']:.1f}%",
             f"{r['peak_rss_mb_ingest']:,.0f}", f"{r['peak_rss_mb_consolidate']:,.0f}") for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    line = "  ".join(h.rjust(w) for h, w in zip(head, widths))
    print()
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    print()
    for r in results:
        s = r["steps"]

        def secs(step: str) -> str:
            x = s[step]
            opened = f", {x['with_catalog_seconds']:.2f}s with the catalog open" if x["open_seconds"] else ""
            return (f"{x['seconds']:.3f}s (cpu {x['cpu_seconds']:.2f}s{opened}; trials "
                    + ", ".join(f"{t:.3f}" for t in x["trials_seconds"]) + ")")
        print(f"{r['items']:,} items: {r['bundles']} bundles, {r['input_mb']:.0f} MB of JSON, {r['sources']:,} sources; "
              f"load average {r['loadavg_before'][0]:.1f} before, {r['loadavg_after'][0]:.1f} after")
        for step in ("ingest", "consolidate", "reconsolidate", "baseline"):
            print(f"  {step:<14}{secs(step)}  peak {s[step]['peak_rss_mb']:,.0f} MB")
        print(f"  consolidated output identical to the baseline's: {r['output_matches_baseline']['identical']}")
    print()
    for r in results:
        for name, ok, shown in targets_for(r):
            print(f"{r['items']:>9,}  {'met   ' if ok else 'MISSED'}  {name}: {shown}")
    if any(r["loadavg_before"][0] > 1.0 for r in results):
        print("\nnote: other processes were using the CPUs (load average above); the figures are the fastest trials.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="searchlake landing/consolidation benchmark")
    parser.add_argument("--sizes", default="100000,1000000", help="comma list of item counts")
    parser.add_argument("--items-per-bundle", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3,
                        help="trials per step; the fastest counts (others share the machine)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dirs (bundles, lake)")
    parser.add_argument("--writers", default="1,2,4",
                        help="comma list of writer counts on a shared PostgreSQL catalog ('' skips them)")
    parser.add_argument("--writer-items", type=int, default=200_000,
                        help="items landed by all writers together (the same for every writer count)")
    parser.add_argument("--pg", choices=("durable", "fast"), default="durable",
                        help="PostgreSQL settings: its own defaults, or fsync off")
    args = parser.parse_args(argv)

    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    scratch = Path(tempfile.mkdtemp(prefix="searchlake-bench-"))
    results = []
    writers = None
    try:
        for items in sizes:
            results.append(bench_size(items, args, scratch))
        if args.writers.strip():
            from bench.writers import bench_writers
            writers = bench_writers(args, scratch)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"kept {scratch}")
    if results:
        print_table(results)
    if writers:
        from bench.writers import print_writers
        print_writers(writers)
    OUT.mkdir(exist_ok=True)
    doc = {
        "command": " ".join([".venv/bin/python", "bench/run.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "seed": args.seed,
        "items_per_bundle": args.items_per_bundle,
        "targets": TARGETS,
        "results": [{**r, "targets": {n: {"met": ok, "value": v} for n, ok, v in targets_for(r)}}
                    for r in results],
        "writers": writers and _with_writer_targets(writers),
    }
    (OUT / "results.json").write_text(json.dumps(doc, indent=2))
    print(f"\nwrote {OUT / 'results.json'}")
    return 0


def _with_writer_targets(writers: dict) -> dict:
    from bench.writers import writer_targets
    return {**writers, "targets": {n: {"met": ok, "value": v} for n, ok, v in writer_targets(writers)}}


if __name__ == "__main__":
    sys.exit(main())
