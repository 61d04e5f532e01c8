"""A run ends in a true state, whatever dies. Real processes, killed for
real (SIGKILL), against the session's Prefect server:

- the process running a research run dies: within its lease (a few of its
  heartbeats) the run reads `interrupted` in the `runs` view, in
  `searchlake tasks` and on the page, with no other run started and
  nothing written by anyone;
- only the Prefect worker dies, while the flow run it started writes the
  report: the orphaned flow process publishes it, then Prefect's console
  logging, whose reader is gone, raises SystemExit at its next line; the
  run is complete in the lake and in Prefect all the same;
- and Prefect's side: every flow run beats often enough for the shipped
  zombie-flow-runs automation, which Prefect accepts, to crash the runs that
  stop beating and no other.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient
from tests.conftest import PROJECT, harness_api_url
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION, write_library

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
    from tasks.server.events import read_events
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

    from tasks.server.serve import build_app, make_server
    with TestClient(build_app(settings), base_url="http://127.0.0.1") as page:
        home, task = page.get("/"), page.get("/tasks/killed")
    assert home.status_code == task.status_code == 200
    assert '<span class="status interrupted">interrupted</span>' in home.text
    assert "latest run <a" in task.text and ">interrupted</a>" in task.text
    # the run's own page follows its events: their stream ends with the run's error, though none was written
    ((trace_id,),) = lake.rows("SELECT trace_id FROM runs WHERE task_id = 'killed'")
    with make_server(settings, "127.0.0.1", 0, ask_every=0.2) as server:
        stream = httpx.get(f"{server.url}/runs/killed/{trace_id}/events", timeout=GENEROUS)
    last = json.loads([line for line in stream.text.splitlines() if line.startswith("data:")][-1][5:])
    assert (last["stepType"], last["status"]) == ("pipeline", "error")
    assert last["payload"]["error"] == row["error"]


# -- only the worker dies ----------------------------------------------------------

class HeldLLM(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers nothing usable
    (every caller falls back to what it does without a model), and holds
    the report's synthesis request until released: the test kills the
    worker meanwhile."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _HeldLLMHandler)
        self.synthesis_asked = threading.Event()
        self.release = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _HeldLLMHandler(BaseHTTPRequestHandler):
    server: HeldLLM

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if b"research synthesis agent" in body and not self.server.release.is_set():
            self.server.synthesis_asked.set()
            self.server.release.wait(GENEROUS)
        answer = json.dumps({"id": "c1", "object": "chat.completion", "model": "held",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": "no answer here"}}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def held_llm():
    server = HeldLLM()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.release.set()
    server.shutdown()


def deploy_research(pool: str) -> str:
    """A process work pool and a deployment of the research flow on it, run
    from the project folder; the id of a flow run of it (library only)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    async def deploy(parameters: dict) -> str:
        async with get_client() as client:
            await client.create_work_pool(WorkPoolCreate(
                name=pool, type="process", base_job_template=ProcessWorker.get_default_base_job_template()))
            flow_id = await client.create_flow_from_name("searchlake-research-deployment")
            deployment_id = await client.create_deployment(
                flow_id=flow_id, name=pool, work_pool_name=pool, entrypoint="flows/research.py:research_deployment",
                path=str(PROJECT), job_variables={"working_dir": str(PROJECT)})
            run = await client.create_flow_run_from_deployment(deployment_id, parameters=parameters)
            return str(run.id)
    return deploy


def flow_run_state(flow_run_id: str):
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return (await client.read_flow_run(flow_run_id)).state
    return asyncio.run(read())


def test_a_run_whose_worker_died_after_it_published_its_report_is_complete(user, lake, tmp_path, held_llm):
    env = user.env(**user.prefect, SEARCHLAKE_LLM_BASE_URL=held_llm.base_url, SEARCHLAKE_LLM_MODEL="held",
                   SEARCHLAKE_LLM_API_KEY="held-key", SEARCHLAKE_MAX_QUERIES_PER_INTENT="1",
                   # every answer is unusable: the run must still ask for the synthesis, which the endpoint holds
                   SEARCHLAKE_LLM_MAX_UNUSABLE="100",
                   SEARCHLAKE_RUN_HEARTBEAT_SECONDS=HEARTBEAT, PREFECT_WORKER_QUERY_SECONDS="1")
    library = write_library(tmp_path / "library")
    flow_run_id = asyncio.run(deploy_research("orphans")({
        "question": QUESTION, "task_id": "orphaned", "library": str(library), "providers": ["library"], "target": 2}))
    prefect = str(Path(sys.executable).with_name("prefect"))
    with open(tmp_path / "worker.log", "w") as log:
        worker = subprocess.Popen([prefect, "worker", "start", "--pool", "orphans"], cwd=PROJECT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    flow_pid = None
    try:
        assert held_llm.synthesis_asked.wait(GENEROUS), (tmp_path / "worker.log").read_text()[-3000:]
        flow_pid = run_row(lake, "orphaned")["pid"]  # the flow's own process, which the worker started
        assert flow_pid != worker.pid
        os.kill(worker.pid, signal.SIGKILL)  # the worker alone: the flow process goes on, orphaned
        worker.wait(timeout=60)
        held_llm.release.set()  # the report goes out; the flow's next log line meets no reader

        row = wait_for(lambda: (row := run_row(lake, "orphaned"))["status"] != "running" and row,
                       "the run to end")
        assert (row["status"], row["error"]) == ("complete", None)
        ((outputs,),) = lake.rows("SELECT outputs FROM runs WHERE task_id = 'orphaned'")
        assert json.loads(outputs)["after_the_report"] == "SystemExit: 1"  # what came after it, said
        assert lake.rows("SELECT count(*) FROM reports WHERE task_id = 'orphaned'") == [(1,)]
        state = wait_for(lambda: (state := flow_run_state(flow_run_id)).is_final() and state,
                         "the flow run to reach a final state")
        assert state.is_completed(), state
    finally:
        held_llm.release.set()
        for pid in (worker.pid, flow_pid):
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


# -- Prefect's side: heartbeats and the zombie-flow-runs automation --------------------

def test_the_zombie_flow_runs_automation_is_one_prefect_accepts_and_every_run_beats_often_enough(prefect_engine):
    """automations/zombie-flow-runs.yaml, created as `prefect automation
    create --from-file` creates it: Prefect's documented recipe (a proactive
    trigger after a heartbeat, expecting the next one or a final state,
    crashing the run). Every flow run of searchlake beats at least four
    times within its window: the deployments (prefect.yaml) and the
    processes of searchlake's own commands."""
    import yaml
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore, Posture

    from flows.common import FLOW_HEARTBEAT_SECONDS
    spec = AutomationCore.model_validate(yaml.safe_load((PROJECT / "automations/zombie-flow-runs.yaml").read_text()))

    async def create_and_read():
        async with get_client() as client:
            return await client.read_automation(await client.create_automation(spec))
    created = asyncio.run(create_and_read())
    trigger = created.trigger
    assert trigger.posture == Posture.Proactive and trigger.after == {"prefect.flow-run.heartbeat"}
    assert {"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
            "prefect.flow-run.TimedOut", "prefect.flow-run.Crashed"} <= trigger.expect
    assert trigger.for_each == {"prefect.resource.id"} and trigger.threshold == 1
    assert trigger.match.root == {"prefect.resource.id": "prefect.flow-run.*"}
    (action,) = created.actions
    assert action.type == "change-flow-run-state" and action.state == "CRASHED"
    window = trigger.within.total_seconds()

    deployments = yaml.safe_load((PROJECT / "prefect.yaml").read_text())["deployments"]
    beats = {d["name"]: int(d["work_pool"]["job_variables"]["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"])
             for d in deployments}
    assert beats and all(30 <= seconds <= window / 4 for seconds in beats.values()), beats  # 30: Prefect's minimum
    assert 30 <= FLOW_HEARTBEAT_SECONDS <= window / 4

    # a searchlake command's process beats that often unless told otherwise
    env = {k: v for k, v in os.environ.items() if "HEARTBEAT_FREQUENCY" not in k}
    said = subprocess.run([sys.executable, "-c", "import flows, prefect.settings as s; "
                           "print(s.get_current_settings().flows.heartbeat_frequency)"],
                          cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120)
    assert said.stdout.split() == [str(FLOW_HEARTBEAT_SECONDS)], said.stderr
