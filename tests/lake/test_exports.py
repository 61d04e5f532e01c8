"""Dashboards read the lake's Parquet with plain readers (Polars, pyarrow):
the exports folder holds exactly what the catalog holds, after rebuilds,
replaced bundles and compaction — the lake's own table folders do not
(small commits live in the catalog, replaced rows stay in their files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pyarrow.dataset as ds
import pytest

from tasks.lake.catalog import open_catalog
from tasks.lake.compaction import compact
from tasks.lake.exports import EXPORTS_FOLDER

SORT = {"consolidated": ["task_id", "final_rank"], "bundles": ["task_id", "query_id", "provider"],
        "error_log": ["task_id", "logged_at", "url"]}


def catalog_rows(lake, table: str) -> list[dict]:
    return lake.dicts(f"SELECT * FROM {table} ORDER BY {', '.join(SORT[table])}")


def polars_rows(lake, table: str) -> list[dict]:
    frame = pl.scan_parquet(Path(lake.root) / EXPORTS_FOLDER / table).collect()
    return frame.sort(SORT[table]).to_dicts()


def pyarrow_rows(lake, table: str) -> list[dict]:
    rows = ds.dataset(Path(lake.root) / EXPORTS_FOLDER / table, format="parquet", partitioning="hive").to_table()
    return pl.from_arrow(rows).sort(SORT[table]).to_dicts()


def same_rows(lake, table: str) -> None:
    wanted = catalog_rows(lake, table)
    for read in (polars_rows, pyarrow_rows):
        found = read(lake, table)
        columns = list(wanted[0]) if wanted else []
        assert [{c: row[c] for c in columns} for row in found] == wanted, (table, read.__name__)


def test_plain_parquet_readers_find_exactly_what_the_catalog_holds(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item(f"https://a.example/{n}", 0.9 - n / 100) for n in range(20)]))
    inbox.write(new_bundle("q2", [new_item("https://b.example/1", 0.8), new_item("https://a.example/3", 0.7)]))
    inbox.write(new_bundle("q1", [new_item("https://c.example/1", 0.5)], task_id="t2"), "t2-q1.json")
    lake.ingest(inbox.folder)
    lake.consolidate("t1")
    lake.consolidate("t2")
    for table in ("consolidated", "bundles"):
        same_rows(lake, table)
    assert len(polars_rows(lake, "consolidated")) == 22

    # a rebuild rewrites a task's rows: the copy is not doubled
    lake.consolidate("t1", rebuild=True)
    lake.consolidate("t1", rebuild=True)
    same_rows(lake, "consolidated")
    assert len(polars_rows(lake, "consolidated")) == 22

    # a replaced bundle: its old rows are gone from the copy too
    lake.ingest(inbox.write(new_bundle("q2", [new_item("https://d.example/1", 0.99)]), "q2-again.json"), replace=True)
    lake.consolidate("t1")
    same_rows(lake, "consolidated")
    same_rows(lake, "bundles")
    assert "https://b.example/1" not in {r["url"] for r in polars_rows(lake, "consolidated")}

    # compaction merges the lake's files and leaves delete files nowhere a reader of the exports looks
    with open_catalog(lake.settings, "test-compact") as catalog:
        compact(catalog, keep_days=0)
    for table in ("consolidated", "bundles"):
        same_rows(lake, table)
    assert {p.suffix for p in (Path(lake.root) / EXPORTS_FOLDER).rglob("*") if p.is_file()} == {".parquet"}
    assert not list((Path(lake.root) / EXPORTS_FOLDER).glob("*/*/*.parquet.*"))


def test_a_partition_is_one_file_named_by_its_task(lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)], task_id="solar-2026")))
    lake.consolidate("solar-2026")
    folder = Path(lake.root) / EXPORTS_FOLDER / "consolidated"
    assert [str(p.relative_to(folder)) for p in folder.rglob("*.parquet")] == ["task_id=solar-2026/data.parquet"]
    # the task id comes from the folder (hive layout), not twice from the file as well
    assert "task_id" not in pl.read_parquet(folder / "task_id=solar-2026" / "data.parquet", hive_partitioning=False).columns


def test_export_writes_the_copies_of_a_lake_made_before_them_and_refuses_an_unknown_task(
        cli, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)], task_id="old")))
    lake.consolidate("old")
    exports = Path(lake.root) / EXPORTS_FOLDER
    for path in sorted(exports.rglob("*"), reverse=True):  # as a lake made before exports existed
        path.unlink() if path.is_file() else path.rmdir()

    done = cli.run("export", "--all")
    assert done.returncode == 0 and done.stdout.startswith("old: exported consolidated, bundles")
    same_rows(lake, "consolidated")
    refused = cli.run("export", "--task-id", "nope")
    assert refused.returncode == 2 and refused.stderr == "error: no bundles have landed for task 'nope'\n"


# -- links planted in the exports folder -------------------------------------------

def tree_state(folder: Path) -> dict[str, tuple]:
    """Every entry below a folder (and the folder itself) with its bytes and
    modification time: a file created and removed again changes its folder's."""
    state = {".": ("folder", folder.stat().st_mtime_ns)}
    for path in sorted(folder.rglob("*")):
        kind = path.read_bytes() if path.is_file() else "folder"
        state[str(path.relative_to(folder))] = (kind, path.stat().st_mtime_ns)
    return state


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder beyond the lake, holding what a planted link would have overwritten or deleted."""
    folder = tmp_path / "outside"
    for relative in ("data.parquet", "task_id=t1/data.parquet"):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(b"not searchlake's")
    return folder


PLANTED = {  # where a link is planted: the table's folder, the staging folder, a task's folder
    "table": "consolidated", "staging": ".staging", "task": "consolidated/task_id=t1",
    "emptied task": "error_log/task_id=t1",  # a task with no error rows: its copy is deleted
}


@pytest.mark.parametrize("where", PLANTED)
def test_a_link_planted_in_exports_is_never_written_or_deleted_through(lake, inbox, new_bundle, new_item, outside,
                                                                       capfd, where):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)])))
    link = Path(lake.root) / EXPORTS_FOLDER / PLANTED[where]
    if link.exists():
        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    before = tree_state(outside)

    lake.consolidate("t1")  # commits, then refreshes the task's copies

    assert tree_state(outside) == before
    assert link.is_symlink()
    warned = [line for line in capfd.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warned and all(f"{EXPORTS_FOLDER}/" in line and "symbolic link" in line for line in warned)
    assert lake.count("consolidated") == 1  # the work itself is committed


def test_the_export_command_refuses_a_planted_link_in_one_line(cli, lake, inbox, new_bundle, new_item, outside):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)])))
    link = Path(lake.root) / EXPORTS_FOLDER / "bundles" / "task_id=t1"
    shutil.rmtree(link)
    link.symlink_to(outside, target_is_directory=True)
    before = tree_state(outside)

    done = cli.run("export", "--task-id", "t1")

    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        f"error: {EXPORTS_FOLDER}/bundles/task_id=t1 in the lake is a symbolic link or a file, not a folder")
    assert tree_state(outside) == before
