"""A run ends in a true state, whatever dies. Real processes, killed for
real (SIGKILL), against the session's Prefect server:

- the process running a research run dies: within its lease (a few of its
  heartbeats) the run reads `interrupted` in the `runs` view, in
  `searchlake tasks` and on the page, with no other run started and
  nothing written by anyone;
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import pytest
from starlette.testclient import TestClient
from tests.conftest import harness_api_url
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION

HEARTBEAT = "0.5"  # s: the lease is four of them
GENEROUS = 120.0  # s: how long a test waits for what should come within seconds


@pytest.fixture
def user(prefect_engine, cli, tmp_path, monkeypatch):
    """The command line with no provider keys or budget variables of the
    developer's, reporting to the session's Prefect server."""
    for name in PROVIDER_KEYS + BUDGET_ENV:
        monkeypatch.delenv(name, raising=False)
    cli.prefect = {"PREFECT_API_URL": harness_api_url(), "PREFECT_HOME": str(tmp_path / "prefect-home"),
                   "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    return cli


@pytest.fixture
def silent_searxng():
    """A SearXNG that takes connections and never answers: a search waits there."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"


def wait_for(condition, what: str, timeout: float = GENEROUS):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.2)
    return found


def run_row(lake, task_id: str) -> dict | None:
    rows = lake.dicts("SELECT status, error, started_at, finished_at, pid FROM runs WHERE task_id = ?", [task_id])
    return rows[0] if rows else None


def searching(settings, task_id: str) -> bool:
    """The run's progress events say its search started (it waits there)."""
    from tasks.lake.files import run_logs_root
    from tasks.progress.events import read_events
    return any(event.step_type == "deep_search" for path in run_logs_root(settings).glob(f"**/task_id={task_id}/**/events.jsonl")
               for event in read_events(path))


def test_a_killed_research_process_reads_interrupted_everywhere_within_its_lease(user, lake, settings,
                                                                                 silent_searxng):
    env = {**user.prefect, "SEARXNG_URL": silent_searxng, "SEARCHLAKE_HTTP_TIMEOUT": "600",
           "SEARCHLAKE_MAX_QUERIES_PER_INTENT": "1", "SEARCHLAKE_RUN_HEARTBEAT_SECONDS": HEARTBEAT}
    research = user.popen("research", QUESTION, "--providers", "searxng", "--task-id", "killed", "--here", **env)
    try:
        wait_for(lambda: searching(settings, "killed"), "the run's search to start")
        time.sleep(3 * float(HEARTBEAT))  # a few heartbeats: alive, it reads running
        assert run_row(lake, "killed")["status"] == "running"
    finally:
        os.kill(research.pid, signal.SIGKILL)
        research.communicate(timeout=60)

    row = wait_for(lambda: (row := run_row(lake, "killed"))["status"] == "interrupted" and row,
                   "the runs view to read the run interrupted")
    assert row["pid"] == research.pid
    assert row["error"] == (f"interrupted: the process that ran it (pid {research.pid} on {socket.gethostname()}) "
                            "gave no sign of life for 2 s")
    # it ended with its last sign of life: a heartbeat after its start
    ((last_beat,),) = lake.rows("SELECT heartbeat_at FROM runs WHERE task_id = 'killed'")
    assert row["finished_at"] == last_beat > row["started_at"]
    # nobody wrote it: the record itself still says running, every reader judges
    assert lake.rows("SELECT status FROM run_log WHERE task_id = 'killed'") == [("running",)]

    tasks = user.run("tasks", "--format", "json", timeout=60)
    assert tasks.returncode == 0, tasks.stderr
    assert [(r["task_id"], r["last_status"]) for r in json.loads(tasks.stdout)] == [("killed", "interrupted")]

    from tasks.progress.serve import build_app
    with TestClient(build_app(settings), base_url="http://127.0.0.1") as page:
        home, task = page.get("/"), page.get("/tasks/killed")
    assert home.status_code == task.status_code == 200
    assert '<span class="status interrupted">interrupted</span>' in home.text
    assert "latest run <a" in task.text and ">interrupted</a>" in task.text
