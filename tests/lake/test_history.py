"""Every commit searchlake makes says who made it and what it did
(DuckLake's author, commit message and extra info of each snapshot), and
`searchlake history` lists them newest first, readable at 80 columns, with
the tables they changed by name."""

from __future__ import annotations

import getpass
import json
import re
import socket
from pathlib import Path

from tasks.common.settings import Settings
from tests.conftest import LakeDriver
from tests.outside_reader import outside_connection

ME = f"{getpass.getuser()}@{socket.gethostname()}"


def snapshots(settings: Settings) -> list[dict]:
    con = outside_connection(settings.catalog_location, Path(settings.home) / "outside-extensions")
    try:
        rows = con.sql("SELECT snapshot_id, author, commit_message, commit_extra_info FROM lake.snapshots() "
                       "WHERE snapshot_id > 0 ORDER BY 1").fetchall()
    finally:
        con.close()
    return [{"id": i, "author": a, "message": m, "tasks": json.loads(x)["tasks"] if x else []} for i, a, m, x in rows]


def fill(cli, inbox, new_bundle, new_item) -> None:
    """Commands that commit: ingest (one file refused), consolidate, a policy, compact."""
    inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9), new_item("https://b.example/2", 0.4)]))
    inbox.write(new_bundle("q1", [new_item("https://c.example/3")], task_id="t2"), "t2-q1.json")
    inbox.write_text("{not json", "broken.json")
    assert cli.run("ingest", str(inbox.folder)).returncode == 1  # the broken file is refused
    assert cli.run("consolidate", "--all").returncode == 0
    assert cli.run("policy", "--demand-id", "news", "--set", "max_detail_fetch=5").returncode == 0
    assert cli.run("compact").returncode == 0


def test_every_commit_names_its_author_and_says_what_it_did(cli, inbox, new_bundle, new_item, settings):
    fill(cli, inbox, new_bundle, new_item)
    commits = snapshots(settings)
    assert commits and all(c["author"] == ME and c["message"] for c in commits), commits
    messages = [c["message"] for c in commits]
    assert messages[0].startswith("schema: tables and views of version ")
    assert "ingest 3 files: landed 2 bundles (3 items), 1 refused" in messages
    assert "consolidate t1: 2 sources (2 new) from 1 bundle" in messages
    assert "consolidate t2: 1 source (1 new) from 1 bundle" in messages
    assert "policy news: max_detail_fetch=5" in messages
    assert any(m.startswith("compact: ") for m in messages)
    by_message = {c["message"]: c["tasks"] for c in commits}
    assert by_message["ingest 3 files: landed 2 bundles (3 items), 1 refused"] == ["t1", "t2"]
    assert by_message["consolidate t2: 1 source (1 new) from 1 bundle"] == ["t2"]


def test_history_lists_commits_newest_first_by_table_name_at_80_columns(cli, inbox, new_bundle, new_item):
    fill(cli, inbox, new_bundle, new_item)
    done = cli.run("history")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    ids = [int(line.split()[0]) for line in lines if re.match(r"\s*\d+  \d{4}-\d\d-\d\d ", line)]
    assert ids == sorted(ids, reverse=True) and len(ids) >= 6
    text = " ".join(done.stdout.split())  # wrapped lines joined
    assert f"{ids[-1]} " in done.stdout and ME in text
    assert "ingest 3 files: landed 2 bundles (3 items), 1 refused" in text
    assert "inserted into" in text and "bundle_catalog" in text and "quarantine_log" in text
    assert "table #" not in text and not re.search(r"inserted into \d", text)  # names, never ids

    two = cli.run("history", "--limit", "2")
    assert len([line for line in two.stdout.splitlines() if re.match(r"\s*\d+  \d{4}-", line)]) == 2


def test_history_of_one_task_keeps_its_commits(cli, inbox, new_bundle, new_item):
    fill(cli, inbox, new_bundle, new_item)
    done = cli.run("history", "--task-id", "t2")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "consolidate t2: 1 source" in text and "ingest 3 files" in text
    assert "consolidate t1" not in text and "policy" not in text and "compact" not in text


def test_history_of_an_unknown_task_is_one_error_line(cli, inbox, new_bundle, new_item, error_lines_of):
    fill(cli, inbox, new_bundle, new_item)
    for args in (["--task-id", "nope"], ["--task-id", "../x"], ["--limit", "0"]):
        done = cli.run("history", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stdout == "" and len(error_lines_of(done.stderr)) == 1 and done.stderr.count("\n") == 1
    assert "unknown task 'nope'" in cli.run("history", "--task-id", "nope").stderr


def test_no_commit_carries_the_catalog_password(tmp_path, postgres_catalog, inbox, new_bundle, new_item,
                                                 monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_HOME", str(tmp_path / "home"))
    settings = Settings(catalog=postgres_catalog + " password=hunter2-catalog-secret")
    lake = LakeDriver(settings)
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1")])))
    lake.consolidate()
    commits = lake.rows("SELECT author, commit_message, commit_extra_info FROM lake.snapshots() WHERE snapshot_id > 0")
    assert len(commits) >= 3 and all(author == ME for author, _, _ in commits)
    assert "hunter2" not in repr(commits)
