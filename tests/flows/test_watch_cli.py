"""`searchlake watch add/list/remove` against a running Prefect server (its
own PREFECT_HOME, a free port on 127.0.0.1, the scheduler's loops
shortened): the watch is a deployment Prefect's API shows, its interval
schedule makes scheduled runs, and removing the watch removes the
deployment and its runs while the lake keeps the watch's row."""

from __future__ import annotations

import time

import httpx

from tests.flows.test_deployments import SCHEDULE_SECONDS, prefect_server  # noqa: F401  (the fixture)
from tests.research_helpers import write_library


def deployments(api: str) -> dict[str, dict]:
    return {d["name"]: d for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()}


def scheduled_runs(api: str, deployment_id: str) -> int:
    runs = httpx.post(f"{api}/flow_runs/filter", timeout=10, json={
        "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}},
        "deployments": {"id": {"any_": [deployment_id]}}}).json()
    return len(runs)


def test_watch_add_schedules_rounds_and_remove_unschedules_them(prefect_server, cli, lake, tmp_path):
    env, _log = prefect_server
    api = env["PREFECT_API_URL"]
    library = write_library(tmp_path / "library")
    prefect_env = {key: env[key] for key in ("PREFECT_HOME", "PREFECT_API_URL")}

    added = cli.run("watch", "add", "How efficient are solar panels?", "--every", "6h", "--name", "solar",
                    "--library", str(library), "--providers", "library", "--target", "3", timeout=180,
                    **prefect_env)
    assert added.returncode == 0, added.stderr
    assert "watching 'solar' every 6h" in added.stdout

    deployment = deployments(api)["watch-solar"]
    assert deployment["work_pool_name"] == "searchlake"
    assert [s["schedule"]["interval"] for s in deployment["schedules"]] == [6 * 3600.0]
    assert deployment["parameters"] == {"name": "solar"}
    give_up = time.monotonic() + SCHEDULE_SECONDS
    while not scheduled_runs(api, deployment["id"]) and time.monotonic() < give_up:
        time.sleep(2)
    assert scheduled_runs(api, deployment["id"]), "the schedule made no run"

    [row] = lake.dicts("SELECT * FROM watches")
    assert (row["name"], row["topic"], row["interval_seconds"], row["deployment_id"]) == (
        "solar", "watch-solar", 21600, deployment["id"])
    listed = cli.run("watch", "list")
    assert listed.stdout.splitlines()[0] == "solar" and "every 6h · 0 rounds" in listed.stdout

    again = cli.run("watch", "add", "Another question?", "--every", "1h", "--name", "solar", **prefect_env)
    assert again.returncode != 0 and "a watch named 'solar' exists already" in again.stderr

    removed = cli.run("watch", "remove", "solar", timeout=180, **prefect_env)
    assert removed.returncode == 0, removed.stderr
    assert "watch-solar" not in deployments(api)
    assert scheduled_runs(api, deployment["id"]) == 0
    assert [r["removed_at"] is not None for r in lake.dicts("SELECT removed_at FROM watches")] == [True]
    assert "no watch yet" in cli.run("watch", "list").stderr


def test_without_a_prefect_server_watch_add_says_so_and_stores_nothing(cli, lake, tmp_path):
    library = write_library(tmp_path / "library")
    done = cli.run("watch", "add", "How efficient are solar panels?", "--every", "6h", "--library", str(library),
                   "--providers", "library", PREFECT_API_URL="http://127.0.0.1:9/api")
    assert done.returncode != 0
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == [
        "error: the Prefect server at PREFECT_API_URL=http://127.0.0.1:9/api does not answer: start it "
        "(`prefect server start`) or unset PREFECT_API_URL"]
    assert lake.count("watches") == 0


def test_watch_run_runs_a_round_now_and_says_what_it_found(cli, settings, tmp_path, prefect_home):
    from bench.watch import start_watch
    library = write_library(tmp_path / "library")
    start_watch(settings, "solar", {"library": str(library), "providers": ["library"], "target": 3})
    done = cli.run("watch", "run", "solar", timeout=300, PREFECT_HOME=str(prefect_home))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Round 1 is the first of this watch: 5 sources")
    assert lines[1].split() == ["topic:", "watch-solar", "round", "1"]
