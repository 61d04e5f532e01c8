"""`searchlake serve` and `searchlake research` as a user runs them: real
subprocesses against a private lake and a private Prefect home. Mistakes are
one `error:` line and exit 2; a research run started while `serve` is up runs
in that server (Prefect already started there) and prints what a local run
prints."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from tests.research_helpers import BUDGET_ENV, FIXTURES, PROVIDER_KEYS, QUESTION, write_library

from tasks.common.settings import Settings
from flows.cli.autoserve import LOG
from tasks.lake.files import run_logs_root
from tasks.server.events import events_path, read_events
from tasks.server.handoff import ServeRecord, fingerprint, record_path, run_values


@pytest.fixture
def user(cli, tmp_path, prefect_home, monkeypatch):
    for name in PROVIDER_KEYS + BUDGET_ENV + ("PREFECT_API_URL",):
        monkeypatch.delenv(name, raising=False)
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
    same = fingerprint(Settings(), "salt")
    assert fingerprint(Settings(), "salt") == same
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret-1")
    with_key = fingerprint(Settings(), "salt")
    assert with_key != same and "sk-or-secret-1" not in with_key
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret-2")
    assert fingerprint(Settings(), "salt") != with_key


def test_the_fingerprint_covers_every_providers_settings_and_the_prefect_api(settings, monkeypatch):
    """A provider's key or URL is declared beside its code, not in Settings:
    the fingerprint covers every one (and Prefect's API, where a run is recorded)."""
    import tasks.retrieval.providers.registry as registry
    covered = run_values(Settings())
    for section in registry.provider_settings_classes():
        assert {f"{section.__name__}.{name}" for name in section.model_fields} <= set(covered), section
    same = fingerprint(Settings(), "salt")
    for variable, value in {"SEARXNG_URL": "http://127.0.0.1:9/", "TAVILY_API_KEY": "tvly-other",
                            "SEARCHLAKE_LLM_MODEL": "other", "SEARCHLAKE_LIBRARY": "/srv/notes",
                            "PIPELINE_TIMEOUT": "60", "PREFECT_API_URL": "http://127.0.0.1:9/api"}.items():
        with monkeypatch.context() as changed:
            changed.setenv(variable, value)
            assert fingerprint(Settings(), "salt") != same, variable
    assert fingerprint(Settings(), "salt") == same


def test_the_fingerprint_is_keyed_by_a_salt_of_each_server(settings, monkeypatch):
    """Without the salt (in the record, readable by its user only), a
    fingerprint seen in a request cannot be checked against guessed keys."""
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-guessable")
    assert fingerprint(Settings(), "one salt") != fingerprint(Settings(), "another salt")
    record = ServeRecord("http://127.0.0.1:9", os.getpid(), fingerprint(Settings(), "salt"), "key", "salt")
    record.write(settings)
    text = record_path(settings, os.getpid()).read_text()
    assert "tvly-guessable" not in text
    assert record.serves(Settings())
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-other")
    assert not record.serves(Settings())


def test_how_a_server_starts_and_stops_is_not_part_of_the_fingerprint(settings, monkeypatch):
    same = fingerprint(Settings(), "salt")
    for name, value in {"SEARCHLAKE_AUTOSERVE": "true", "SEARCHLAKE_SERVE_IDLE_MINUTES": "1",
                        "SEARCHLAKE_SERVE_PORT": "9000", "SEARCHLAKE_SERVE_TOKEN": "t" * 20,
                        "SEARCHLAKE_SERVE_LIBRARIES": "/srv/notes"}.items():
        monkeypatch.setenv(name, value)
    assert fingerprint(Settings(), "salt") == same


def test_an_idle_time_that_is_not_positive_is_one_line(user, error_lines_of):
    done = user.run("serve", "--port", "0", "--idle-minutes", "0", timeout=30)
    assert done.returncode == 2
    assert error_lines_of(done.stderr) == ["error: --idle-minutes must be more than 0, not 0"]


def test_a_record_of_a_dead_server_is_ignored(settings):
    dead = subprocess.Popen(["true"])
    dead.wait()
    ServeRecord("http://127.0.0.1:9", dead.pid, fingerprint(settings, "salt"), "key", "salt").write(settings)
    assert ServeRecord.running(settings) == [] and ServeRecord.of(settings, dead.pid) is None
    assert not record_path(settings, dead.pid).exists()  # cleared away


def test_the_record_is_readable_by_its_user_only(settings):
    # its key lets a request name any library folder
    ServeRecord("http://127.0.0.1:9", os.getpid(), fingerprint(settings, "salt"), "key", "salt").write(settings)
    assert record_path(settings, os.getpid()).stat().st_mode & 0o777 == 0o600
    assert ServeRecord.of(settings, os.getpid()).key == "key"


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
        assert "status:   complete in " in done.stdout and "• " in done.stdout  # the answer, then the run in a line
        (row,) = lake.dicts("SELECT status, filtered_count FROM runs WHERE task_id = 'through-serve'")
        assert row == {"status": "complete", "filtered_count": 2}
        assert httpx.get(f"{record['url']}/tasks/through-serve", timeout=10).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert not record_path(Settings(home=user.home), server.pid).exists()  # a stopped server leaves no record


def wait_for_record(home, server: subprocess.Popen, timeout: float = 60) -> dict:
    path = record_path(Settings(home=home), server.pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read()
        if path.exists():
            return json.loads(path.read_text())
        time.sleep(0.1)
    raise AssertionError("serve wrote no record")


def test_research_starts_a_background_server_that_stops_when_idle(user, lake, error_lines_of):
    """Two commands started together start one server and both run in it; a
    command with other settings starts its own; every server stops by itself
    after the idle time, leaving no process behind."""
    env = {"SEARCHLAKE_AUTOSERVE": "true", "SEARCHLAKE_SERVE_IDLE_MINUTES": "0.1",  # 6 s
           "SEARCHLAKE_MAX_QUERIES_PER_INTENT": "1"}
    args = (QUESTION, "--library", str(user.library), "--target", "2")
    log = Path(user.home) / LOG
    servers: set[int] = set()
    try:
        together = [user.popen("research", *args, "--task-id", f"auto-{n}", **env) for n in (1, 2)]
        outcomes = [(p.wait(timeout=600), *p.communicate()) for p in together]
        for code, stdout, stderr in outcomes:
            servers |= started_pids(stderr)
            assert code == 0 and "status:   complete in " in stdout, stderr
            assert not error_lines_of(stderr)
        (url,) = {re.search(r"running in searchlake serve at (\S+)", stderr)[1] for _, _, stderr in outcomes}
        assert len(servers) == 1 and sum("started a background searchlake serve" in e for _, _, e in outcomes) == 1
        assert log.read_text().count("searchlake on ") == 1

        # other settings: the running server is not used, a new one is started
        other = user.run("research", *args, "--task-id", "auto-3", timeout=600,
                         **{**env, "SEARCHLAKE_MAX_QUERIES_PER_INTENT": "2"})
        servers |= started_pids(other.stderr)
        assert other.returncode == 0, other.stderr
        assert len(servers) == 2 and url not in other.stderr
        statuses = lake.rows("SELECT task_id, status FROM runs WHERE task_id LIKE 'auto-%' ORDER BY 1")
        assert statuses == [("auto-1", "complete"), ("auto-2", "complete"), ("auto-3", "complete")]

        for pid in servers:
            assert wait_for_session_end(pid, timeout=120) == [], f"server {pid} still running"
        assert log.read_text().count("searchlake serve stopped: nothing to do for 0.1 min") == 2
        assert not list(Path(user.home).glob("serve-*.json"))
    finally:
        for pid in servers:
            stop_session(pid)


class FakeSearxng(ThreadingHTTPServer):
    """A SearXNG instance on 127.0.0.1: GET /search?format=json answers in the
    documented shape (tests/fixtures/providers/searxng.json) with pages of its
    own, and remembers every query it was asked."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _SearxngHandler)
        self.queries: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> "FakeSearxng":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


class _SearxngHandler(BaseHTTPRequestHandler):
    server: FakeSearxng

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        query = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
        self.server.queries.append(query)
        doc = json.loads((FIXTURES / "searxng.json").read_text())
        template = doc["results"][0]
        doc["query"] = query
        doc["results"] = [{**template, "url": f"{self.server.url}/page/{n}", "title": f"Solar panels and storage {n}",
                           "content": f"How efficient solar panels and battery storage are, part {n}.",
                           "score": 4.0 - n / 10} for n in range(1, 7)]
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_commands_with_other_settings_never_run_in_each_others_server(user, lake, error_lines_of):
    """SEARXNG_URL names one instance for a command and another for the next:
    each command searches its own (the second one used to run in the first
    one's server and search the first instance). A provider's URL is one of
    its own settings, not searchlake's: the fingerprint covers them. Each
    server goes on serving the commands of its settings."""
    env = {"SEARCHLAKE_AUTOSERVE": "true", "SEARCHLAKE_SERVE_IDLE_MINUTES": "1",
           "SEARCHLAKE_MAX_QUERIES_PER_INTENT": "1"}
    args = (QUESTION, "--providers", "searxng", "--target", "2")
    servers: set[int] = set()
    with FakeSearxng() as first_instance, FakeSearxng() as second_instance:
        try:
            first = user.run("research", *args, "--task-id", "via-first", timeout=600,
                             SEARXNG_URL=first_instance.url, **env)
            servers |= started_pids(first.stderr)
            assert first.returncode == 0 and not error_lines_of(first.stderr), first.stderr
            asked_first = len(first_instance.queries)
            assert asked_first and not second_instance.queries

            second = user.run("research", *args, "--task-id", "via-second", timeout=600,
                              SEARXNG_URL=second_instance.url, **env)
            servers |= started_pids(second.stderr)
            assert second.returncode == 0 and not error_lines_of(second.stderr), second.stderr
            assert second_instance.queries and len(first_instance.queries) == asked_first  # its own instance only
            assert len(servers) == 2  # a server of its own
            (first_url,), (second_url,) = (re.findall(r"running in searchlake serve at (\S+)", done.stderr)
                                           for done in (first, second))
            assert first_url != second_url

            # the first server still serves the first settings, beside the second one
            again = user.run("research", *args, "--task-id", "via-first-again", timeout=600,
                             SEARXNG_URL=first_instance.url, **env)
            assert again.returncode == 0, again.stderr
            assert "started a background searchlake serve" not in again.stderr and f"at {first_url} " in again.stderr
            assert len(first_instance.queries) > asked_first
        finally:
            for pid in servers:
                stop_session(pid)
    for task_id, instance in (("via-first", first_instance), ("via-second", second_instance)):
        urls = {row["url"] for row in lake.consolidated(task_id)}
        assert urls and all(url.startswith(instance.url) for url in urls), (task_id, urls)


def started_pids(stderr: str) -> set[int]:
    return {int(pid) for pid in re.findall(r"started a background searchlake serve at \S+ \(pid (\d+)", stderr)}


def session_members(sid: int) -> list[int]:
    """Live processes of the session (a background server starts its own)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _, _, session = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:4]
        except (OSError, ValueError):
            continue
        if int(session) == sid and state != "Z":
            members.append(int(entry.name))
    return members


def wait_for_session_end(sid: int, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while (members := session_members(sid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return members


def stop_session(sid: int) -> None:
    if session_members(sid):
        os.killpg(sid, signal.SIGKILL)


def test_a_run_of_a_killed_server_ends_interrupted_when_the_next_one_starts(user, lake):
    """kill -9 of `serve` mid-run leaves its run 'running'; the next server
    marks it interrupted and ends its trace and its events (a page
    following it stops)."""
    silent = socket.create_server(("127.0.0.1", 0))  # takes connections, never answers: searches wait
    env = {"SEARXNG_URL": f"http://127.0.0.1:{silent.getsockname()[1]}", "SEARCHLAKE_HTTP_TIMEOUT": "600",
           "SEARCHLAKE_MAX_QUERIES_PER_INTENT": "1"}
    servers = []
    try:
        servers.append(start_serve(user, env))
        record = wait_for_record(user.home, servers[0])
        started = httpx.post(f"{record['url']}/api/research", headers={"Authorization": f"Bearer {record['key']}"},
                             json={"question": QUESTION, "fingerprint": record["fingerprint"], "task_id": "killed",
                                   "providers": ["searxng"]}, timeout=300)
        assert started.status_code == 200, started.text
        run_id = started.json()["run_id"]
        events = events_path(run_logs_root(Settings(home=user.home)), "killed", run_id)
        wait_for(lambda: any(e.step_type == "deep_search" for e in read_events(events)), "the search to start")

        servers[0].kill()  # kill -9, mid-search
        servers[0].wait(timeout=30)
        assert lake.dicts("SELECT status FROM runs WHERE trace_id = ?", [run_id]) == [{"status": "running"}]

        assert not ServeRecord.running(Settings(home=user.home))  # a dead server's record is not used
        servers.append(start_serve(user, env))
        # the row is closed first, the events ended last
        wait_for(lambda: read_events(events)[-1].is_terminal, "the next server to end the run's events")
        (row,) = lake.dicts("SELECT status, error FROM runs WHERE trace_id = ?", [run_id])
        assert row["status"] == "interrupted"
        assert row["error"].startswith(f"interrupted: the process that ran it (pid {servers[0].pid} on ")
        last = read_events(events)[-1]
        assert last.status == "error" and last.payload.error == row["error"]
        trace = [json.loads(line) for line in (events.parent / "trace.jsonl").read_text().splitlines()]
        assert (trace[-1]["kind"], trace[-1]["status"]) == ("run", "interrupted")
        assert lake.rows("SELECT count(*) FROM run_events WHERE trace_id = ?", [run_id]) == [(len(trace),)]
    finally:
        silent.close()
        for server in servers:
            stop_session(server.pid)  # the server and the Prefect server it started


def start_serve(user, env: dict) -> subprocess.Popen:
    return subprocess.Popen(user.command("serve", "--port", "0"), cwd=user.cwd, env=user.env(**env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(condition, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.2)

