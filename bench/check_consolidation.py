"""Check that consolidation gives exactly what the SQL of a reference git
revision gives (default: 3aa4529, the consolidation SQL before the
narrow-row rewrite): the same
consolidated file row for row, the same error log and the same cursor, over
a first run, an incremental run with late bundles, nothing new, and a
rebuild after a replaced bundle.

    .venv/bin/python bench/check_consolidation.py [--items 60000] [--ref 3aa4529]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.generate import generate  # noqa: E402
from tasks import sqlfiles  # noqa: E402
from tasks.catalog import open_catalog  # noqa: E402
from tasks.config import Settings  # noqa: E402
from tasks.consolidation import consolidate  # noqa: E402
from tasks.landing import land_files  # noqa: E402

REFERENCE = "3aa4529"
CONSOLIDATION_SQL = ["consolidate_new_items", "consolidate_merge", "consolidate_errors",
                     "consolidate_last_read", "new_items_counts", "new_items_drop"]


def reference_sql(ref: str) -> dict[str, str]:
    return {name: subprocess.run(["git", "show", f"{ref}:sql/{name}.sql"], cwd=ROOT, check=True,
                                 capture_output=True, text=True).stdout for name in CONSOLIDATION_SQL}


class UsingSQL:
    """Consolidation statements from `texts` instead of sql/ for a while."""

    def __init__(self, texts: dict[str, str] | None):
        self.texts = texts

    def __enter__(self):
        self.original = sqlfiles.sql
        if self.texts:
            texts, original = self.texts, self.original
            sqlfiles.sql = lambda name: texts[name] if name in texts else original(name)  # type: ignore[assignment]
            import tasks.catalog
            tasks.catalog.sql = sqlfiles.sql  # catalog imported the function itself
        return self

    def __exit__(self, *exc):
        import tasks.catalog
        sqlfiles.sql = self.original  # type: ignore[assignment]
        tasks.catalog.sql = self.original


def state(home: Path) -> dict:
    with open_catalog(Settings(home=home), "check", read_only=True) as cat:
        return {
            "consolidated": cat.con.execute("SELECT * FROM consolidated").fetchall(),  # file order
            "types": cat.con.execute("SELECT column_name, column_type FROM (DESCRIBE consolidated)").fetchall(),
            "errors": cat.con.execute("SELECT * EXCLUDE (logged_at) FROM error_log ORDER BY ALL").fetchall(),
            "cursor": cat.con.execute("SELECT * EXCLUDE (updated_at) FROM read_cursor ORDER BY ALL").fetchall(),
        }


def run_consolidate(home: Path, texts: dict[str, str] | None, rebuild: bool = False):
    with UsingSQL(texts), open_catalog(Settings(home=home), "check") as cat:
        report = consolidate(cat, "bench", rebuild=rebuild)
    return report


def land(home: Path, path: Path, replace: bool = False):
    with open_catalog(Settings(home=home), "check") as cat:
        report = land_files(cat, [path], replace=replace)
    assert not report.refused, [r.line() for r in report.refused]


def compare(step: str, ours: Path, ref: Path, texts: dict[str, str], rebuild: bool = False) -> None:
    a = run_consolidate(ours, None, rebuild)
    b = run_consolidate(ref, texts, rebuild)
    assert a == b, f"{step}: reports differ\n{a}\n{b}"
    sa, sb = state(ours), state(ref)
    for key in sa:
        assert sa[key] == sb[key], f"{step}: {key} differs"
    print(f"{step}: identical ({a.line()})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=60000)
    parser.add_argument("--ref", default=REFERENCE)
    args = parser.parse_args(argv)
    texts = reference_sql(args.ref)
    with tempfile.TemporaryDirectory(prefix="check-consolidation-") as tmp:
        tmp = Path(tmp)
        generate(args.items, tmp / "all", per_bundle=300, seed=3)
        files = sorted((tmp / "all").glob("*.json"), key=lambda p: int(p.stem[1:]))
        # Late bundles: every 7th query lands in the second part, so the
        # second run reads queries that sort before the cursor.
        first, second = tmp / "first", tmp / "second"
        first.mkdir()
        second.mkdir()
        for path in files:
            n = int(path.stem[1:])
            target = second if (n % 7 == 0 or n > len(files) * 2 // 3) else first
            shutil.copy(path, target / path.name)
        ours, ref = tmp / "ours", tmp / "ref"
        for home in (ours, ref):
            land(home, first)
        compare("first run", ours, ref, texts)
        for home in (ours, ref):
            land(home, second)
        compare("incremental run with late bundles", ours, ref, texts)
        compare("nothing new", ours, ref, texts)
        # Replace one bundle: its items change, so the next run rebuilds.
        doc = json.loads(files[4].read_text())
        doc["results"] = doc["results"][::-1][:150]
        replaced = tmp / "replaced.json"
        replaced.write_text(json.dumps(doc))
        for home in (ours, ref):
            land(home, replaced, replace=True)
        compare("rebuild after a replaced bundle", ours, ref, texts)
        compare("explicit rebuild", ours, ref, texts, rebuild=True)
    print("consolidation identical to", args.ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
