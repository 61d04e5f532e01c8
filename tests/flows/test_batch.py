"""`searchlake research --questions FILE` as a user runs it: real
subprocesses against a private lake, a small folder of notes searched by the
library provider (offline), a private Prefect home.

A mistake is one `error:` line and exit 2 before anything is recorded; a
batch killed with SIGKILL mid-way and run again ends with exactly one answer
per question, nothing searched twice, nothing doubled; `batch_answers` is
the table of answers, readable through `searchlake sql`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, write_library

from tasks.common.settings import Settings

BATCH_ANSWERS_COLUMNS = ["batch_id", "row", "question", "task_id", "status", "answered", "first_insight",
                         "citation_count", "top_source_url", "top_source_title", "elapsed_seconds", "params"]

# four questions the notes answer, an empty row and a question asked twice
QUESTIONS = """How efficient are solar panels?

How does battery storage keep solar electricity?
What does the grid do with solar farms?
how efficient are  solar panels?
How much do solar panels and storage cost?
"""


@pytest.fixture
def batch_cli(cli, tmp_path, monkeypatch):
    for name in PROVIDER_KEYS + BUDGET_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)  # each batch starts its own temporary server
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    cli.prefect_home = tmp_path / "prefect-home"
    cli.library = write_library(tmp_path / "notes")
    cli.questions = tmp_path / "questions.txt"
    cli.questions.write_text(QUESTIONS, encoding="utf-8")
    return cli


def batch_args(cli, *extra: str) -> list[str]:
    return ["research", "--questions", str(cli.questions), "--library", str(cli.library), "--providers", "library",
            "--target", "2", *extra]


# -- mistakes: one line, exit 2, nothing recorded -------------------------------------------------

@pytest.mark.parametrize("content, extra, words", [
    ("question,colour\nWhat is a kWh?,red\n", (), "row 1: unknown column 'colour'"),
    (b"What is a kWh?\nHow do panels \xff age?\n", (), "row 2 is not UTF-8 text"),
    ("\n\n", (), "holds no question"),
    ("What is a kWh?\n", ("--concurrency", "9"), "--concurrency must be between 1 and 8, not 9"),
    ("What is a kWh?\n", ("--batch", "../up"), "--batch"),
    ("What is a kWh?\n", ("--providers", "library,goggle"), "unknown provider 'goggle'"),
    ("What is a kWh?\n", ("--timeout", "10"), "--timeout=10 is out of range"),
    ("What is a kWh?\n", ("a question too",), "give no question"),
], ids=["unknown-column", "not-utf8", "no-question", "concurrency", "batch-name", "provider", "timeout",
        "question-and-file"])
def test_a_bad_batch_is_one_line_exit_2_and_nothing_recorded(batch_cli, tmp_path, content, extra, words,
                                                             error_lines_of):
    path = tmp_path / ("questions.csv" if str(content).startswith("question,") else "questions.txt")
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    args = ["research", "--questions", str(path), "--library", str(batch_cli.library), *extra]
    done = batch_cli.run(*args, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    (line,) = error_lines_of(done.stderr)
    assert words in line and done.stderr.strip().splitlines() == [line]
    assert done.stdout == ""
    assert not Settings(home=batch_cli.home).catalog_path.exists()  # nothing half-written
    assert not batch_cli.prefect_home.exists() or not any(batch_cli.prefect_home.glob("*.db"))


def test_batch_options_need_a_question_file(batch_cli, error_lines_of):
    done = batch_cli.run("research", "What is a kWh?", "--concurrency", "2", timeout=60)
    assert done.returncode == 2
    assert error_lines_of(done.stderr) == ["error: --batch and --concurrency go with --questions FILE"]


# -- killed mid-way, run again -----------------------------------------------------------------------

def folders(root: Path, kind: str) -> set[str]:
    """Tasks with something under lake/<kind>/task_id=…/ (raw bundles, reports)."""
    return {p.name.removeprefix("task_id=") for p in (root / kind).glob("task_id=*") if any(p.iterdir())}


def answered_and_half_done(lake) -> tuple[set[str], set[str]]:
    """Tasks with a report, and tasks with landed bundles but no report, as the catalog says."""
    reported = {r[0] for r in lake.rows("SELECT task_id FROM reports")}
    return reported, {r[0] for r in lake.rows("SELECT DISTINCT task_id FROM bundles")} - reported


def kill_when_one_question_is_answered_and_another_half_searched(cli, lake) -> None:
    process = subprocess.Popen(cli.command(*batch_args(cli, "--concurrency", "2")), cwd=cli.home.parent,
                               env=cli.env(SEARCHLAKE_MAX_QUERIES_PER_INTENT="1"), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            # the lake's files come before their commit: the catalog is read once it surely exists
            if folders(lake.root, "reports") and all(answered_and_half_done(lake)):
                return
            assert process.poll() is None, f"the batch ended before it could be killed: {process.stderr.read()}"
            time.sleep(0.05)
        pytest.fail("the batch never had one question answered and another half-way")
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the command and the Prefect server it started
        process.wait(timeout=30)


def test_a_batch_killed_mid_way_and_run_again_answers_each_question_once(batch_cli, lake, error_lines_of):
    kill_when_one_question_is_answered_and_another_half_searched(batch_cli, lake)

    reported_before, half_done = answered_and_half_done(lake)
    landed_before = Counter(r[0] for r in lake.rows("SELECT task_id FROM bundles"))
    # the half-done question may have reached its report between the last look and the kill (a busy
    # machine): then the rest of the test still holds, with nothing to check of its resumed queries
    assert reported_before, (reported_before, landed_before)
    members = lake.dicts('SELECT "row", question, task_id FROM batch_questions ORDER BY "row"')
    assert [m["row"] for m in members] == [1, 3, 4, 6]  # recorded before any run: the empty row and the repeat are not

    again = batch_cli.run(*batch_args(batch_cli, "--concurrency", "2"), timeout=600,
                          SEARCHLAKE_MAX_QUERIES_PER_INTENT="1")
    assert again.returncode == 0, again.stderr
    assert "row 2: empty, skipped" in again.stderr and "row 5: the same question as row 1; it runs once" in again.stderr
    assert error_lines_of(again.stderr) == []
    assert f"4 questions — {4 - len(reported_before)} answered now, {len(reported_before)} answered before" \
        in again.stdout

    # exactly one complete answer per question
    answers = lake.dicts('SELECT * FROM batch_answers ORDER BY "row"')
    assert [(a["row"], a["task_id"]) for a in answers] == [(m["row"], m["task_id"]) for m in members]
    assert all(a["answered"] and a["status"] == "complete" for a in answers), answers
    assert Counter(r[0] for r in lake.rows("SELECT task_id FROM reports")) == Counter(m["task_id"] for m in members)
    complete = Counter(r[0] for r in lake.rows("SELECT task_id FROM runs WHERE status = 'complete'"))
    assert complete == Counter(m["task_id"] for m in members)
    runs = Counter(r[0] for r in lake.rows("SELECT task_id FROM runs"))
    assert all(runs[task_id] == 1 for task_id in reported_before)  # an answered question is not asked again

    # nothing searched twice: the half-done tasks resumed with what had landed
    for task_id, bundles in lake.rows("SELECT task_id, count(*) FROM bundles GROUP BY task_id"):
        distinct = lake.rows("SELECT count(DISTINCT query_id) FROM bundles WHERE task_id = ?", [task_id])[0][0]
        assert bundles == distinct, task_id
    for task_id in half_done:
        (resumed,) = lake.rows(
            "SELECT sum(CAST(json_extract(e.detail, '$.resumed') AS INTEGER)) FROM run_events e "
            "JOIN runs r USING (trace_id) WHERE r.task_id = ? AND r.status = 'complete' AND e.kind = 'stage' "
            "AND e.status = 'complete' AND e.name IN ('search', 'deeper_search')", [task_id])[0]
        assert resumed >= landed_before[task_id], (task_id, resumed, landed_before[task_id])
    for task_id, sources, distinct in lake.rows(
            "SELECT task_id, count(*), count(DISTINCT source_id) FROM consolidated GROUP BY task_id"):
        assert sources == distinct, task_id

    # a third run has nothing left to do
    third = batch_cli.run(*batch_args(batch_cli), timeout=300)
    assert third.returncode == 0 and "0 answered now, 4 answered before" in third.stdout
    assert lake.count("runs") == sum(runs.values())

    # the answers, as an analyst reads them through the SQL sandbox
    done = batch_cli.run("sql", "--format", "json", "select * from batch_answers order by row", timeout=60)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert list(rows[0]) == BATCH_ANSWERS_COLUMNS
    assert [row["question"] for row in rows] == [m["question"] for m in members]
    for row in rows:
        assert row["first_insight"] and row["citation_count"] >= 1 and row["elapsed_seconds"] > 0
        assert row["top_source_url"].startswith("file://") and row["top_source_title"]
        params = json.loads(row["params"]) if isinstance(row["params"], str) else row["params"]
        assert params == {"library": str(batch_cli.library), "providers": ["library"], "target": 2}


# -- the deployment's parameter -----------------------------------------------------------------------

def test_the_deployment_researches_a_list_as_a_batch(prefect_engine, settings, lake, tmp_path, monkeypatch):
    for name in PROVIDER_KEYS + BUDGET_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SEARCHLAKE_MAX_QUERIES_PER_INTENT", "1")
    from flows.batch import research_batch_deployment
    questions = ["How efficient are solar panels?",
                 {"question": "How does battery storage keep solar electricity?", "target": 3}, ""]
    options = dict(batch="notes", concurrency=2, library=str(write_library(tmp_path / "notes")),
                   providers=["library"], target=2)

    first = research_batch_deployment(questions, **options)
    assert first["batch_id"] == "notes" and first["notes"] == ["questions row 3: empty, skipped"]
    assert [(o["row"], o["status"]) for o in first["outcomes"]] == [(1, "complete"), (2, "complete")]
    answers = lake.dicts("SELECT * FROM batch_answers WHERE batch_id = 'notes' ORDER BY row")
    assert [a["task_id"] for a in answers] == [o["task_id"] for o in first["outcomes"]]
    assert all(a["answered"] and a["first_insight"] for a in answers)
    params = [json.loads(a["params"]) if isinstance(a["params"], str) else a["params"] for a in answers]
    assert [p["target"] for p in params] == [2, 3]  # the row's own option over the batch's

    again = research_batch_deployment(questions, **options)
    assert [(o["task_id"], o["status"]) for o in again["outcomes"]] == \
        [(o["task_id"], "answered") for o in first["outcomes"]]
    assert lake.count("runs") == 2
