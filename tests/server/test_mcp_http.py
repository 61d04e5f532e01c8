"""The Model Context Protocol at /mcp of `searchlake serve`, over streamable
HTTP: behind the same guards as every other route (the Host, the token, and
a request that changes something comes from the server's own page or
carries its token or key), with research runs in the server's launcher over
the library folders the page offers. The guards through the real app in
process; the whole through the real command and the SDK's own client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from starlette.testclient import TestClient

from flows.launcher import ResearchLauncher
from flows.mcp_server import McpEndpoint, build_server, offered_libraries_only
from tasks.common.settings import Settings
from tasks.server.serve import build_app
from tasks.server.web.guards import CROSS_SITE
from tasks.server.web.launching import HOW_TO_OFFER_A_FOLDER
from tests.conftest import copy_of_prefect_home
from tests.mcp_helpers import RESEARCH_TIMEOUT, Progress, http_transport, mcp_session, text_of
from tests.server.test_serve_cli import wait_for_record
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION, write_library

REPO = Path(__file__).resolve().parents[2]
TOKEN = "a-long-random-token-for-the-mcp-tests-7c1d"
OWNER_KEY = "key-of-the-process-that-runs-the-server"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


# -- the guards, in process ------------------------------------------------------

def served_with_mcp(settings: Settings) -> TestClient:
    """The app `searchlake serve` runs, its MCP endpoint with it, on the loopback."""
    launcher = ResearchLauncher(settings)
    endpoint = McpEndpoint(build_server(settings, launcher, library_rule=offered_libraries_only(settings)))
    app = build_app(settings, launcher, host="127.0.0.1", owner_key=OWNER_KEY, endpoints=[endpoint])
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.mark.parametrize("headers, status", [
    pytest.param({}, 403, id="no-origin-no-key"),
    pytest.param({"Origin": "http://evil.example"}, 403, id="another-sites-origin"),
    pytest.param({"Origin": "null"}, 403, id="origin-null"),
    pytest.param({"Authorization": "Bearer a-guess"}, 403, id="a-wrong-key"),
    pytest.param({"Authorization": f"Bearer {OWNER_KEY}"}, 200, id="the-servers-key"),
    pytest.param({"Origin": "http://127.0.0.1"}, 200, id="the-servers-own-origin"),
])
def test_a_message_to_mcp_passes_the_rules_of_every_request_that_changes_something(settings, headers, status):
    with served_with_mcp(settings) as client:  # `with`: the endpoint's sessions run while the app serves
        answer = client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})
    assert answer.status_code == status, answer.text
    if status == 403:
        assert answer.text == CROSS_SITE
    else:
        assert '"serverInfo":{"name":"searchlake"' in answer.text


def test_mcp_answers_only_its_host_names(settings):
    with served_with_mcp(settings) as client:
        answer = client.post("http://rebound.example/mcp", json=INITIALIZE,
                             headers={**MCP_HEADERS, "Authorization": f"Bearer {OWNER_KEY}"})
    assert answer.status_code == 400


def test_with_a_token_mcp_needs_it(settings, monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_SERVE_TOKEN", TOKEN)
    with served_with_mcp(Settings()) as client:
        refused = client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://127.0.0.1"})
        admitted = client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"})
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert admitted.status_code == 200


# -- the real command ---------------------------------------------------------------

class Served:
    def __init__(self, url: str, library: Path, other_folder: Path, log: Path):
        self.url = url
        self.library = library
        self.other_folder = other_folder
        self.log = log


@pytest.fixture(scope="module")
def served(tmp_path_factory, migrated_prefect_home):
    """`searchlake serve` with a token on 127.0.0.1, offering one library folder."""
    root = tmp_path_factory.mktemp("mcp-http")
    copy_of_prefect_home(migrated_prefect_home, root / "prefect-home")
    library = write_library(root / "library")
    drop = set(PROVIDER_KEYS + BUDGET_ENV + ("PREFECT_API_URL",))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHLAKE_") and k not in drop}
    env.update(SEARCHLAKE_HOME=str(root / "home"), SEARCHLAKE_AUTOSERVE="false", SEARCHLAKE_SERVE_TOKEN=TOKEN,
               SEARCHLAKE_LIBRARY=str(library), PREFECT_HOME=str(root / "prefect-home"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    log = root / "serve.log"
    with open(log, "w") as output:
        server = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve", "--port", "0"], cwd=root, env=env,
                                  stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = wait_for_record(root / "home", server)["url"]
        wait_until_it_answers(url)
        yield Served(url, library, write_library(root / "not-offered"), log)
    finally:
        stop(server)


def stop(server: subprocess.Popen) -> None:
    """SIGTERM, as Ctrl-C: the server stops the Prefect server it started
    (its last log lines go there); then whatever of its session is left."""
    server.terminate()
    try:
        server.wait(timeout=60)
    finally:
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_until_it_answers(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"searchlake serve did not answer at {url} within {timeout:.0f} s")


@pytest.fixture(scope="module")
def agent(served):
    with mcp_session(lambda: http_transport(f"{served.url}/mcp", {"Authorization": f"Bearer {TOKEN}"})) as session:
        yield session


def test_without_the_token_the_sdks_client_is_refused(served):
    # a program names no Origin: without the token it may be a page of another site (403); a page of the
    # server's own would need the token (401)
    assert httpx.post(f"{served.url}/mcp", json=INITIALIZE, headers=MCP_HEADERS, timeout=10).status_code == 403
    assert httpx.post(f"{served.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": served.url},
                      timeout=10).status_code == 401
    with pytest.raises(Exception) as refused:  # the SDK's client gives up on the HTTP 401
        with mcp_session(lambda: http_transport(f"{served.url}/mcp", {})):
            pass
    assert refused.group_contains(MCPError) if isinstance(refused.value, BaseExceptionGroup) \
        else isinstance(refused.value, MCPError)


def test_with_the_token_the_tools_answer(agent):
    assert {tool.name for tool in agent.run("list_tools").tools} == {"research", "read_report", "list_tasks",
                                                                     "top_sources", "sql"}
    assert agent.call("list_tasks").structured_content == {"tasks": [], "more": False}
    refused = agent.call("sql", {"query": "select * from duckdb_settings()"})
    assert refused.is_error and "\n" not in text_of(refused) and "duckdb_settings() is not allowed" in text_of(refused)


def test_research_over_http_runs_in_the_server_over_the_offered_library(agent, served):
    refused = agent.call("research", {"question": QUESTION, "library": str(served.other_folder)})
    assert refused.is_error
    assert text_of(refused) == (f"library folder {str(served.other_folder)!r} is not a library this server offers; "
                                f"it offers the default library ({served.library.resolve()}). {HOW_TO_OFFER_A_FOLDER}")

    progress = Progress()
    result = agent.call("research", {"question": QUESTION, "target": 2}, progress, timeout=RESEARCH_TIMEOUT)
    assert not result.is_error, text_of(result)
    outcome = result.structured_content
    assert outcome["status"] == "complete"
    assert all(source["url"].startswith(served.library.as_uri()) for source in outcome["answer"]["sources"])
    assert progress.seen and [value for value, _, _ in progress.seen] == sorted({v for v, _, _ in progress.seen})
    # the run is the server's: its page shows it
    page = httpx.get(f"{served.url}/tasks/{outcome['task_id']}", headers={"Authorization": f"Bearer {TOKEN}"},
                     timeout=30)
    assert page.status_code == 200
    report = text_of(agent.call("read_report", {"task_id": outcome["task_id"]}))
    assert report.startswith(f"# {QUESTION}")


def test_the_servers_log_holds_no_traceback_and_no_token(served, agent):
    logged = served.log.read_text()
    assert "Traceback" not in logged and TOKEN not in logged
