"""`searchlake tasks` lists the lake's tasks, the latest first, and `report`
and `top` without --task-id read the latest one."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest
from rich.cells import cell_len

from schemas.governance import Budget
from tasks.records.runs import finish_run, start_run
from tasks.reporting.report import publish_report
from tests.report_helpers import PLAN

NARROW = {"COLUMNS": "80"}
HOSTILE_QUESTION = "Why [bold red]does[/] \x1b]0;pwned\x07\x1b[2J this\u202e work? " + "and more " * 20


def run(settings, task_id: str, question: str, status: str = "complete") -> None:
    trace_id = uuid.uuid4().hex
    start_run(settings, trace_id, task_id, question, None, "default", Budget())
    if status != "running":
        finish_run(settings, trace_id, status)


@pytest.fixture
def three_tasks(settings, lake, inbox, new_bundle, new_item):
    """`asked`: two runs, the latest failed; then `ingested`: bundles only;
    then `hostile`: one complete run of a question full of markup and control
    characters."""
    run(settings, "asked", "What is asked first?")
    run(settings, "asked", "What is asked again?", status="failed")
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")], task_id="ingested")))
    run(settings, "hostile", HOSTILE_QUESTION)
    return lake


def test_tasks_lists_the_latest_first_in_two_lines_each(cli, three_tasks):
    done = cli.run("tasks", **NARROW)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0::2] == ["hostile", "ingested", "asked"]
    assert all(cell_len(line) <= 80 for line in lines)
    hostile, ingested, asked = lines[1::2]
    assert " · complete · 1 run · Why [bold red]does[/] ]0;pwned[2J this" in hostile
    assert hostile.endswith("…") and not any(c in done.stdout for c in "\x1b\x07\u202e")
    assert ingested.startswith("  landed ") and ingested.endswith(" · no run")
    assert asked.endswith(" · failed · 2 runs · What is asked again?")


def test_tasks_limit_says_when_there_are_more(cli, three_tasks):
    done = cli.run("tasks", "--limit", "1")
    assert done.stdout.splitlines()[0] == "hostile"
    assert done.stdout.splitlines()[-1] == "(the latest 1; --limit N shows more)"
    assert "--limit N" not in cli.run("tasks", "--limit", "3").stdout


def test_tasks_as_json_and_csv(cli, three_tasks):
    records = json.loads(cli.run("tasks", "--format", "json").stdout)
    assert [(r["task_id"], r["runs"], r["last_status"]) for r in records] == [
        ("hostile", 1, "complete"), ("ingested", 0, None), ("asked", 2, "failed")]
    assert records[0]["question"] == HOSTILE_QUESTION  # the data as it is; only terminals are spared it
    assert records[2]["last_run_at"].startswith("20") and records[2]["last_landed_at"] is None
    rows = list(csv.DictReader(io.StringIO(cli.run("tasks", "--format", "csv", "--limit", "2").stdout)))
    assert [row["task_id"] for row in rows] == ["hostile", "ingested"]


def test_tasks_of_an_empty_lake(cli):
    done = cli.run("tasks")
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("no task in the lake yet")
    assert json.loads(cli.run("tasks", "--format", "json").stdout) == []


@pytest.mark.parametrize("limit", ["0", "-3", "many", "99999999999999999999"])
def test_a_bad_limit_is_one_error_line(cli, error_lines_of, limit):
    done = cli.run("tasks", "--limit", limit)
    assert done.returncode == 2 and done.stdout == ""
    assert error_lines_of(done.stderr) == done.stderr.splitlines() and "--limit" in done.stderr


def test_report_and_top_read_the_latest_task(cli, settings, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://old.example/", title="Old page")], task_id="old")))
    lake.consolidate("old")
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://new.example/", title="New page",
                                                       content_text="The new page says something.")],
                                       task_id="new"), "new.json"))
    lake.consolidate("new")
    publish_report(settings, "new", PLAN)

    top = cli.run("top")
    assert top.returncode == 0, top.stderr
    assert "New page" in top.stdout and "Old page" not in top.stdout
    assert top.stderr == "latest task: new (--task-id names another; searchlake tasks lists them)\n"
    report = cli.run("report")
    assert report.returncode == 0 and report.stdout.startswith(f"# {PLAN['question']}")
    assert report.stderr.splitlines() == ["latest task: new (--task-id names another; searchlake tasks lists them)"]
    assert "Old page" in cli.run("top", "--task-id", "old").stdout


def test_report_of_the_latest_task_without_a_report_says_so(cli, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")], task_id="fresh")))
    done = cli.run("report")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["latest task: fresh (--task-id names another; searchlake tasks lists them)",
                                        "error: no report has been published for task 'fresh'"]


@pytest.mark.parametrize("args", [["report"], ["top"], ["report", "--rebuild"]])
def test_report_and_top_of_an_empty_lake_are_one_error_line(cli, args):
    done = cli.run(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["error: the lake holds no task yet: searchlake research \"QUESTION\" "
                                        "starts one (searchlake ingest lands other agents' bundles)"]
