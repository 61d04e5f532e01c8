"""`searchlake serve` and `searchlake research` as a user runs them: real
subprocesses against a private lake and a private Prefect home. Mistakes are
one `error:` line and exit 2; a research run started while `serve` is up runs
in that server (Prefect already started there) and prints what a local run
prints."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import httpx
import pytest
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION, write_library

from tasks.common.settings import Settings
from tasks.progress.handoff import ServeRecord, fingerprint, record_path


@pytest.fixture
def user(cli, tmp_path, monkeypatch):
    for name in PROVIDER_KEYS + BUDGET_ENV + ("PREFECT_API_URL",):
        monkeypatch.delenv(name, raising=False)
    prefect_home = tmp_path / "prefect-home"
    prefect_home.mkdir()
    monkeypatch.setenv("PREFECT_HOME", str(prefect_home))
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    cli.library = write_library(tmp_path / "library")
    return cli


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_one_line(user, error_lines_of, port):
    done = user.run("serve", "--port", port, timeout=30)
    assert done.returncode == 2
    assert error_lines_of(done.stderr) == [f"error: --port must be between 0 and 65535, not {port}"]


def test_a_port_in_use_is_one_line(user, error_lines_of):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = user.run("serve", "--port", str(port), timeout=30)
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert line == f"error: cannot serve on 127.0.0.1:{port}: Address already in use"


def test_a_prefect_server_that_does_not_start_in_time_is_one_line(user, error_lines_of):
    # 0 s to start: the temporary server cannot be up when Prefect gives up on it
    done = user.run("research", QUESTION, "--library", str(user.library), "--target", "2", timeout=120,
                    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="0")
    assert done.returncode == 2, done.stderr
    (line,) = error_lines_of(done.stderr)
    assert line.startswith("error: Prefect's temporary server did not start within 0 s")
    assert "searchlake serve" in line and "PREFECT_API_URL" in line
    assert done.stdout == ""


def test_a_prefect_api_url_that_does_not_answer_is_one_line(user, error_lines_of):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/api"  # bound, never listening: refused
        done = user.run("research", QUESTION, "--library", str(user.library), "--target", "2", timeout=120,
                        PREFECT_API_URL=url)
    assert done.returncode == 2, done.stderr
    (line,) = error_lines_of(done.stderr)
    assert line.startswith(f"error: the Prefect server at PREFECT_API_URL={url} does not answer")


def test_the_fingerprint_changes_with_any_setting_and_hides_secrets(settings, monkeypatch):
    same = fingerprint(Settings())
    assert fingerprint(Settings()) == same
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret-1")
    with_key = fingerprint(Settings())
    assert with_key != same and "sk-or-secret-1" not in with_key
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret-2")
    assert fingerprint(Settings()) != with_key


def test_a_record_of_a_dead_server_is_ignored(settings):
    dead = subprocess.Popen(["true"])
    dead.wait()
    ServeRecord("http://127.0.0.1:9", dead.pid, fingerprint(settings)).write(settings)
    assert ServeRecord.read(settings) is None


def test_research_runs_in_a_running_serve(user, lake, error_lines_of):
    # the same settings on both sides: a server with other settings is not used
    env = {"SEARCHLAKE_MAX_QUERIES_PER_INTENT": "1"}
    server = subprocess.Popen(user.command("serve", "--port", "0"), cwd=user.cwd, env=user.env(**env),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        record = wait_for_record(user.home, server)
        done = user.run("research", QUESTION, "--library", str(user.library), "--target", "2",
                        "--task-id", "through-serve", timeout=400, **env)
        assert done.returncode == 0, done.stderr
        assert f"running in searchlake serve at {record['url']}" in done.stderr
        assert not error_lines_of(done.stderr)
        # the terminal still shows the run plan and the stages, then the summary
        assert "task id:  through-serve" in done.stderr and "· searching in parallel" in done.stderr
        assert "status:        complete" in done.stdout and "top sources of through-serve" in done.stdout
        (row,) = lake.dicts("SELECT status, filtered_count FROM runs WHERE task_id = 'through-serve'")
        assert row == {"status": "complete", "filtered_count": 2}
        assert httpx.get(f"{record['url']}/tasks/through-serve", timeout=10).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert not record_path(Settings(home=user.home)).exists()  # a stopped server leaves no record


def wait_for_record(home, server: subprocess.Popen, timeout: float = 60) -> dict:
    path = record_path(Settings(home=home))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read()
        if path.exists():
            return json.loads(path.read_text())
        time.sleep(0.1)
    raise AssertionError("serve wrote no record")
