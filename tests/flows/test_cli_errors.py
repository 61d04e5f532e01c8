"""A careless user's mistakes, through the real command line: each is one
`error:` line and exit status 2 — no traceback, no usage panel — and leaves
nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest


def assert_one_error_line(done, *fragments: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "╭" not in done.stderr and "Usage:" not in done.stderr  # no boxed usage panel
    return lines[0]


@pytest.mark.parametrize("args,fragments", [
    (["reprot", "--task-id", "t1"], ["No such command 'reprot'", "--help"]),
    (["sql", "select 1", "--bogus"], ["No such option: --bogus"]),
    (["sql", "select 1", "--format", "xml"], ["'xml' is not one of 'table', 'csv', 'json'"]),
    (["sql"], ["Missing argument 'query'"]),
    (["report", "--format"], ["'--format' requires an argument"]),
    (["top", "--task-id", "t1", "--limit", "0"], ["--limit"]),
])
def test_option_parsing_errors_are_one_line(cli, args, fragments):
    assert_one_error_line(cli.run(*args), *fragments)


def test_no_command_prints_the_help(cli):
    done = cli.run()
    assert done.returncode == 0 and "research" in done.stdout + done.stderr


@pytest.mark.parametrize("target", ["/nonexistent/dir/r.html", "/etc"])
def test_report_output_that_cannot_be_written_is_one_line(cli, target):
    assert_one_error_line(cli.run("report", "--task-id", "t1", "-o", target), "--output")


def test_report_output_is_checked_before_a_rebuild(cli, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    lake.consolidate()
    before = lake.files()
    assert_one_error_line(cli.run("report", "--task-id", "t1", "--rebuild", "-o", "/nonexistent/r.html"))
    assert lake.files() == before  # nothing published on the way to the error


def home_that_is_a_file(tmp_path: Path) -> Path:
    path = tmp_path / "not-a-folder"
    path.write_text("x")
    return path


@pytest.mark.parametrize("make_home", [
    home_that_is_a_file,
    lambda tmp_path: home_that_is_a_file(tmp_path) / "below",
    lambda tmp_path: Path("/proc/searchlake-home"),  # not writable, not even by root
])
@pytest.mark.parametrize("args", [["sql", "select 1"], ["top", "--task-id", "t1"], ["research", "anything"]])
def test_an_unusable_home_is_one_line(cli_at, tmp_path, make_home, args):
    home = make_home(tmp_path)
    assert_one_error_line(cli_at(home).run(*args), "SEARCHLAKE_HOME", str(home))


def test_top_and_rebuild_of_a_task_without_bundles_are_errors(cli, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    lake.consolidate()
    before = lake.files()
    assert_one_error_line(cli.run("top", "--task-id", "t2"), "'t2' has no bundles")
    assert_one_error_line(cli.run("report", "--task-id", "t2", "--rebuild"), "'t2' has no bundles")
    assert not [path for path in lake.files() if "t2" in path] and lake.files() == before
    assert lake.count("reports") == 0  # no empty report was published


def test_top_of_a_task_not_consolidated_yet_says_what_to_run(cli, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    assert_one_error_line(cli.run("top", "--task-id", "t1"), "searchlake consolidate --task-id t1")
