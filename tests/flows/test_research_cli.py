"""`searchlake research` as a user runs it: a real subprocess against a
private lake (SEARCHLAKE_HOME) and a private Prefect home. A mistake in the
command line or the environment is one `error: ...` line and exit 2, found
before any Prefect server starts; a real offline run exits 0 and says where
everything is; a run a gate stops exits 1 and names the gate."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from rich.cells import cell_len
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION, write_library

from tasks.common.settings import Settings


@pytest.fixture
def research_cli(cli, tmp_path, monkeypatch):
    """The `cli` driver (conftest) with no provider keys or budget variables of
    the developer's, a private PREFECT_HOME, and a small document library."""
    for name in PROVIDER_KEYS + BUDGET_ENV:
        monkeypatch.delenv(name, raising=False)
    prefect_home = tmp_path / "prefect-home"
    monkeypatch.setenv("PREFECT_HOME", str(prefect_home))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)  # a run starts its own temporary server
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    cli.prefect_home = prefect_home
    cli.library = write_library(tmp_path / "library")
    return cli


@pytest.fixture(scope="module")
def shared_prefect_home(tmp_path_factory) -> Path:
    """One PREFECT_HOME for the real runs: the first temporary server creates
    and migrates its database, the next one reuses it (a user's ~/.prefect)."""
    return tmp_path_factory.mktemp("prefect-home")


def server_started(prefect_home: Path) -> bool:
    """A temporary Prefect server creates its database under PREFECT_HOME."""
    return any(prefect_home.glob("*.db")) if prefect_home.exists() else False


USER_ERRORS = [
    pytest.param([""], {}, "the question is empty", id="empty-question"),
    pytest.param(["   "], {}, "the question is empty", id="blank-question"),
    pytest.param([QUESTION, "--providers", "library,goggle"], {}, "unknown provider 'goggle'", id="unknown-provider"),
    pytest.param([QUESTION, "--providers", " , "], {}, "--providers names no provider", id="no-provider"),
    pytest.param([QUESTION, "--library", "{tmp}/nowhere"], {}, "does not exist or is not a folder",
                 id="missing-library"),
    pytest.param([QUESTION], {"SEARCHLAKE_LIBRARY": "{tmp}/nowhere"}, "cannot start", id="missing-library-env"),
    pytest.param([QUESTION, "--timeout", "10"], {}, "--timeout=10 is out of range", id="timeout-below-30"),
    pytest.param([QUESTION], {"PIPELINE_MAX_TARGET_COUNT": "500"}, "PIPELINE_MAX_TARGET_COUNT=500 is out of range",
                 id="max-target-env"),
    pytest.param([QUESTION, "--max-fallback-rounds", "9"], {}, "--max-fallback-rounds=9 is out of range",
                 id="fallback-rounds"),
    pytest.param([QUESTION, "--target", "0"], {}, "--target must be at least 1", id="target-zero"),
    pytest.param([QUESTION, "--task-id", "../etc"], {}, "invalid --task-id", id="bad-task-id"),
    pytest.param([QUESTION, "--providers", "tavily"], {}, "TAVILY_API_KEY", id="tavily-without-key"),
    pytest.param([QUESTION, "--providers", "library,brave,tavily"], {}, "BRAVE_API_KEY", id="two-keys-missing"),
]


@pytest.mark.parametrize("args, env, message", USER_ERRORS)
def test_user_error_is_one_line_exit_2_and_no_server(research_cli, tmp_path, args, env, message, error_lines_of):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    env = {k: v.replace("{tmp}", str(tmp_path)) for k, v in env.items()}
    started = time.monotonic()
    done = research_cli.run("research", *args, timeout=30, **env)
    elapsed = time.monotonic() - started
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert error_lines_of(done.stderr) == done.stderr.strip().splitlines(), done.stderr
    (line,) = error_lines_of(done.stderr)
    assert message in line
    assert done.stdout == ""
    assert not server_started(research_cli.prefect_home)
    assert elapsed < 10, elapsed
    # nothing was recorded: the run never started
    assert not Settings(home=research_cli.home).catalog_path.exists()


def test_preflight_names_every_missing_key_in_one_line(research_cli, error_lines_of):
    done = research_cli.run("research", QUESTION, "--providers", "tavily,brave,searxng", timeout=30)
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert all(name in line for name in ("TAVILY_API_KEY", "BRAVE_API_KEY", "SEARXNG_URL"))


def test_offline_research_exits_0_and_says_where_everything_is(research_cli, lake, shared_prefect_home, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(shared_prefect_home))
    done = research_cli.run("research", QUESTION, "--library", str(research_cli.library), "--target", "2",
                            "--task-id", "cli-solar", timeout=120, SEARCHLAKE_MAX_QUERIES_PER_INTENT="1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    task_id, trace_id = next(line.split()[2::3] for line in lines if line.startswith("task id:"))
    report = next(line.split()[1] for line in lines if line.startswith("report: "))
    assert task_id == "cli-solar"
    assert Path(report).is_file() and report.endswith(".html")
    assert next(line for line in lines if line.startswith("status:")).startswith("status:   complete in ")
    # the answer first: the question, findings with note numbers, the cited sources; at 80 columns
    assert lines[0] == QUESTION
    assert "Sources" in lines and any(line.startswith("[1] ") for line in lines)
    answer = lines[:lines.index("Sources")]
    assert any(line.startswith("• ") for line in answer) and "[1]" in "\n".join(answer)
    assert all(cell_len(line) <= 80 for line in lines[:lines.index("Sources")]), done.stdout
    assert "None" not in done.stdout and "{'" not in done.stdout
    assert "top sources of cli-solar" not in done.stdout  # that table only with --details
    (row,) = lake.dicts("SELECT trace_id, status, filtered_count FROM runs WHERE task_id = 'cli-solar'")
    assert row == {"trace_id": trace_id, "status": "complete", "filtered_count": 2}
    # the terminal showed the run plan and the stages on stderr, with no error line
    assert f"trace id: {trace_id}" in done.stderr
    assert "policy:" not in done.stderr and "stages:" not in done.stderr  # those only with --details
    assert not [line for line in done.stderr.splitlines() if line.startswith("error:")]


def test_a_small_library_with_the_default_target_runs_without_a_warning(research_cli, lake, shared_prefect_home,
                                                                        monkeypatch):
    """The default target (10 sources) is more than a five-document library
    holds: once the search has nothing more, the target is what the
    candidates can give, and a sound run warns of nothing."""
    monkeypatch.setenv("PREFECT_HOME", str(shared_prefect_home))
    done = research_cli.run("research", QUESTION, "--library", str(research_cli.library), "--task-id", "cli-small",
                            "--here", timeout=120, SEARCHLAKE_MAX_QUERIES_PER_INTENT="1")
    assert done.returncode == 0, done.stderr
    assert "target 10 sources" in done.stderr  # the plan's default
    sized = re.search(r"^target (\d+) sources: the providers hold (\d+) candidates$", done.stderr, re.MULTILINE)
    assert sized and int(sized[1]) <= int(sized[2]) // 2
    assert not re.search(r"^gate \w+: (warn|fallback)", done.stderr, re.MULTILINE), done.stderr
    (row,) = lake.dicts("SELECT status, stage_history FROM runs WHERE task_id = 'cli-small'")
    assert row["status"] == "complete"
    gates = lake.rows("SELECT name, status FROM run_events WHERE task_id = 'cli-small' AND kind = 'gate'")
    assert gates and all(status == "pass" for _, status in gates), gates


def test_run_stopped_by_a_gate_exits_1_and_names_the_gate(research_cli, lake, shared_prefect_home, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(shared_prefect_home))
    done = research_cli.run("research", "Which whales sing the longest songs?", "--library",
                            str(research_cli.library), "--target", "10", "--task-id", "cli-few", timeout=120,
                            SEARCHLAKE_MAX_QUERIES_PER_INTENT="1")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "status:        failed" in done.stdout
    assert "the search found only" in done.stdout and "--library" in done.stdout
    assert "GateAbort" not in done.stdout + done.stderr
    (row,) = lake.dicts("SELECT status, error FROM runs WHERE task_id = 'cli-few'")
    assert row["status"] == "failed" and "--library" in row["error"]


def test_a_reader_holding_the_catalog_does_not_stop_a_research_run(research_cli, lake, settings, outside_reader,
                                                                   shared_prefect_home, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(shared_prefect_home))
    assert lake.count("runs") == 0  # the catalog exists for the reader to attach
    reader = outside_reader(settings.catalog_location)
    reader.say("BEGIN")  # a snapshot held open for the whole run, from its first read
    assert reader.count("consolidated") == 0
    done = research_cli.run("research", QUESTION, "--library", str(research_cli.library), "--target", "2",
                            "--task-id", "cli-read", timeout=120, SEARCHLAKE_MAX_QUERIES_PER_INTENT="1")
    assert done.returncode == 0, done.stderr
    assert reader.count("consolidated") == 0
    reader.say("COMMIT")
    assert reader.count("consolidated") == lake.count("consolidated") > 0
