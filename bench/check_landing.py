"""Check that landing gives exactly what tasks/landing.py of a reference git
revision gives (default: 3aa4529, before the fast path, the worker pool and
the batched catalog writes): the same results rows, bundle rows, quarantine
rows, raw files and report, for synthetic bundles mixed with edge cases and
bad files, landed in several batches, in one process and with workers.

    .venv/bin/python bench/check_landing.py [--items 30000] [--ref 3aa4529]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.check_fast_path import EDGE, RAW_EDGE  # noqa: E402
from bench.generate import generate  # noqa: E402
from tasks import landing  # noqa: E402
from tasks.catalog import open_catalog  # noqa: E402
from tasks.config import Settings  # noqa: E402

REFERENCE = "3aa4529"


def reference_landing(ref: str, folder: Path):
    source = subprocess.run(["git", "show", f"{ref}:tasks/landing.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = folder / "reference_landing.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("reference_landing", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["reference_landing"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def land(module, home: Path, inbox: Path, task_id: str | None, batch_items: int) -> dict:
    with open_catalog(Settings(home=home), "check") as cat:
        report = module.land_files(cat, [inbox], task_id=task_id, batch_items=batch_items)
        con = cat.con
        lake = Path(cat.lake.root)
        return {
            "report": (sorted(report.landed), sorted(report.unchanged), sorted(report.replaced),
                       [(r.source, r.reason, r.field, r.item_index, r.message, r.task_id, r.query_id, r.errors)
                        for r in report.refused]),
            "results": con.execute("SELECT * FROM results ORDER BY task_id, query_id, item_index").fetchall(),
            "bundles": con.execute("SELECT * EXCLUDE (landed_at, results_file, landing_seq) FROM bundles "
                                   "ORDER BY task_id, query_id").fetchall(),
            "batches": con.execute("SELECT count(DISTINCT results_file), count(DISTINCT landing_seq) "
                                   "FROM bundles").fetchall(),
            "quarantine": con.execute("SELECT * EXCLUDE (quarantined_at) FROM quarantine "
                                      "ORDER BY source_path").fetchall(),
            "raw": sorted(str(p.relative_to(lake)) for p in (lake / "raw").rglob("*") if p.is_file()),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=30000)
    parser.add_argument("--ref", default=REFERENCE)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="check-landing-") as tmp:
        tmp = Path(tmp)
        reference = reference_landing(args.ref, tmp)
        inbox = tmp / "inbox"
        generate(args.items, inbox / "gen", per_bundle=400, seed=9)
        for i, doc in enumerate(EDGE):
            doc = dict(doc, query_id=f"edge{i}") if isinstance(doc.get("query_id"), str) and doc["query_id"] == "q1" else doc
            (inbox / "edge").mkdir(parents=True, exist_ok=True)
            (inbox / "edge" / f"e{i}.json").write_text(json.dumps(doc))
        for i, raw in enumerate(RAW_EDGE):
            (inbox / "edge" / f"raw{i}.json").write_bytes(raw)
        for task_id in (None, "default-task"):
            expected = land(reference, tmp / f"ref-{task_id}", inbox, task_id, batch_items=5000)
            for workers_min_bytes in (1 << 62, 0):
                landing.POOL_MIN_BYTES = workers_min_bytes
                got = land(landing, tmp / f"ours-{task_id}-{workers_min_bytes}", inbox, task_id, batch_items=5000)
                mode = "in one process" if workers_min_bytes else "with workers"
                for key in expected:
                    assert got[key] == expected[key], f"{key} differs ({mode}, task_id={task_id})"
                print(f"task_id={task_id}, {mode}: identical ({len(got['results'])} results rows, "
                      f"{len(got['bundles'])} bundles, {len(got['quarantine'])} quarantined)")
    print("landing identical to", args.ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
