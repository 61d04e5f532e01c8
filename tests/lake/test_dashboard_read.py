"""A dashboard reads the lake with no searchlake code: plain DuckDB with the
DuckLake and SQLite extensions attaches the catalog read-only (Polars takes
the rows from there), and sees exactly what analysts see through `searchlake
sql`, including the rows of small commits that DuckLake keeps inside the
catalog rather than in Parquet files. The manual's snippet for it
(docs/lake.md, "Dashboards and notebooks") runs here as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from tests.outside_reader import outside_connection


@pytest.fixture
def dashboard_connection(settings, tmp_path):
    return lambda: outside_connection(settings.catalog_location, tmp_path / "dashboard-extensions")


def test_a_dashboard_reads_consolidated_and_results(lake, inbox, new_bundle, new_item, dashboard_connection):
    inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9), new_item("https://b.example/2", 0.4)]))
    inbox.write(new_bundle("q2", [new_item("https://b.example/2", 0.8), new_item("https://c.example/3", 0.7)]))
    inbox.write(new_bundle("q1", [new_item(f"https://d.example/{n}", 0.5) for n in range(30)], task_id="t2"),
                "t2-q1.json")
    lake.ingest(inbox.folder)
    lake.consolidate("t1")
    lake.consolidate("t2")

    through_sql = lake.dicts("select task_id, source_id, url, final_rank, seen_count from consolidated "
                             "order by task_id, final_rank")
    con = dashboard_connection()
    consolidated = con.sql("SELECT task_id, source_id, url, final_rank, seen_count FROM lake.consolidated").pl()
    consolidated = consolidated.sort("task_id", "final_rank")
    assert consolidated.to_dicts() == through_sql
    # b was first read in q1 (0.4): the first occurrence wins, then rank by score_final
    assert consolidated.filter(pl.col("task_id") == "t1")["url"].to_list() == [
        "https://a.example/1", "https://c.example/3", "https://b.example/2"]

    per_task = con.sql("SELECT task_id, count(*) AS items FROM lake.results GROUP BY task_id ORDER BY task_id").pl()
    assert per_task.to_dicts() == [{"task_id": "t1", "items": 4}, {"task_id": "t2", "items": 30}]
    con.close()


def test_a_dashboard_can_look_back_at_an_earlier_snapshot(lake, inbox, new_bundle, new_item, dashboard_connection):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)])))
    lake.consolidate()
    con = dashboard_connection()
    before = con.sql("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    con.close()
    lake.ingest(inbox.write(new_bundle("q2", [new_item("https://b.example/2", 0.95)])))
    lake.consolidate()

    con = dashboard_connection()
    then = con.sql(f"SELECT url FROM lake.consolidated AT (VERSION => {before}) ORDER BY final_rank").fetchall()
    now = con.sql("SELECT url FROM lake.consolidated ORDER BY final_rank").fetchall()
    con.close()
    assert then == [("https://a.example/1",)]
    assert now == [("https://b.example/2",), ("https://a.example/1",)]


MANUAL_PAGE = Path(__file__).resolve().parents[2] / "docs" / "lake.md"
SNIPPET_MARK = "<!-- dashboard snippet -->"


def manual_snippet() -> str:
    """The Python block that follows the marker in docs/lake.md, as a reader copies it."""
    after = MANUAL_PAGE.read_text(encoding="utf-8").split(SNIPPET_MARK, 1)[1]
    block = after.split("```python\n", 1)[1].split("```", 1)[0]
    assert block.strip(), "docs/lake.md: the dashboard snippet is empty"
    return block


def test_the_manual_snippet_reads_the_lake_offline_in_a_fresh_process(tmp_path, inbox, new_bundle, new_item):
    """The snippet as written, run from a project folder, on a lake that
    `searchlake ingest` and `consolidate` made in a home named by
    SEARCHLAKE_HOME elsewhere (and in the default home, data/)."""
    from tests.conftest import CLI
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "elsewhere" / "home"
    cli = CLI(home, project)
    inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9), new_item("https://b.example/2", 0.4)]))
    inbox.write(new_bundle("q2", [new_item("https://c.example/3", 0.7)], provider="other"))
    inbox.write(new_bundle("q1", [new_item("https://d.example/4", 0.5)], task_id="t2"), "t2-q1.json")
    assert cli.run("ingest", str(inbox.folder)).returncode == 0
    assert cli.run("consolidate", "--all").returncode == 0

    (project / "data").symlink_to(home, target_is_directory=True)
    for env in ({"SEARCHLAKE_HOME": str(home)}, {}):
        read = _snippet_reads(project, env)
        assert read["calls"] == [["t1", "other", 1], ["t1", "test", 1], ["t2", "test", 1]]
        assert [[task, rank, url] for task, rank, _title, url in read["top"]] == [
            ["t1", 1, "https://a.example/1"], ["t1", 2, "https://c.example/3"], ["t1", 3, "https://b.example/2"],
            ["t2", 1, "https://d.example/4"]]


def _snippet_reads(project: Path, env: dict) -> dict:
    shown = "\nimport json\nprint(json.dumps({'calls': calls.rows(), 'top': top.rows()}))\n"
    environment = {k: v for k, v in os.environ.items() if k != "SEARCHLAKE_HOME"} | env
    done = subprocess.run([sys.executable, "-c", manual_snippet() + shown], cwd=project, capture_output=True,
                          text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
