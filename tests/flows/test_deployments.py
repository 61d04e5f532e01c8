"""prefect.yaml deployed on a real Prefect server: its schedules create runs.

A local `prefect server start` (its own PREFECT_HOME, a free port on
127.0.0.1, the scheduler's loops shortened by Prefect's own settings) gets
the project's work pool and `prefect deploy --all`; the test then waits for
the scheduler to put scheduled runs of the ingest and consolidate
deployments in the database. With a SQLAlchemy that Prefect's scheduler
cannot use, it logs `Can't evaluate bulk DML statement` and no run appears.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

PROJECT = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).with_name("prefect"))
STARTUP_SECONDS = 180  # 10-25 s on an idle machine; far more when the cores are shared
SCHEDULE_SECONDS = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def prefect_server(tmp_path, prefect_home):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "2",
        "PREFECT_SERVER_SERVICES_SCHEDULER_RECENT_DEPLOYMENTS_LOOP_SECONDS": "1",
    })
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
                              start_new_session=True)
    try:
        wait_for_health(env["PREFECT_API_URL"], server, tmp_path / "server.log")
        yield env, tmp_path / "server.log"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def wait_for_health(api: str, server: subprocess.Popen, log: Path) -> None:
    give_up = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < give_up:
        assert server.poll() is None, f"prefect server exited:\n{log.read_text()[-3000:]}"
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    pytest.fail(f"prefect server did not answer within {STARTUP_SECONDS} s:\n{log.read_text()[-3000:]}")


def prefect(env: dict, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([PREFECT, *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def scheduled_runs(api: str) -> dict[str, int]:
    """Scheduled flow runs per deployment name."""
    deployments = httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()
    names = {d["id"]: d["name"] for d in deployments}
    runs = httpx.post(f"{api}/flow_runs/filter", timeout=10,
                      json={"flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}}}).json()
    counts: dict[str, int] = {}
    for run in runs:
        name = names.get(run.get("deployment_id"))
        if name:
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_deployed_schedules_create_runs(prefect_server):
    env, log = prefect_server
    api = env["PREFECT_API_URL"]
    prefect(env, "work-pool", "create", "searchlake", "--type", "process")
    deployed = prefect(env, "--no-prompt", "deploy", "--all")
    assert "ingest-landing-folder" in deployed.stdout + deployed.stderr

    give_up = time.monotonic() + SCHEDULE_SECONDS
    counts: dict[str, int] = {}
    while time.monotonic() < give_up:
        counts = scheduled_runs(api)
        if counts.get("ingest-landing-folder") and counts.get("consolidate-all"):
            break
        time.sleep(2)
    server_log = log.read_text()
    assert "Can't evaluate bulk DML" not in server_log
    assert counts.get("ingest-landing-folder") and counts.get("consolidate-all"), (counts, server_log[-3000:])
    assert "research" not in counts  # on demand only: no schedule

    ingest = next(d for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()
                  if d["name"] == "ingest-landing-folder")
    assert ingest["parameters"] == {"landing": "data/landing", "consolidate": True}
    # every deployment's runs beat often enough for automations/zombie-flow-runs.yaml
    for deployment in httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json():
        assert deployment["job_variables"]["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "30", deployment["name"]
    batch = next(d for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()
                 if d["name"] == "research-batch")
    assert batch["parameters"] == {"questions": "data/samples/questions.txt", "concurrency": 2}
    assert "research-batch" not in counts  # on demand only
