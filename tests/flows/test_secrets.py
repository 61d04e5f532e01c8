"""No configured secret — API keys, tokens, credentials inside configured
URLs — reaches anything under SEARCHLAKE_HOME, Prefect's logs or the
command's output, even when the servers echo the requests that carried them.

A real `searchlake research` run (subprocess, temporary Prefect server)
against a SearXNG instance and an OpenAI-compatible LLM endpoint served from
127.0.0.1: the SearXNG URL carries user:password and ?token=, the LLM URL a
key in its query and the LLM key a header; SearXNG echoes its request into a
result and into an error, the LLM echoes the whole request (headers included)
as its answer, and page fetching is on. Afterwards every file under the home
(Parquet read as tables, the DuckDB catalog read table by table, everything
else byte for byte), every file under PREFECT_HOME and the captured output are
searched for each secret the settings object reports.
"""

from __future__ import annotations

import base64
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pyarrow.parquet as pq
import pytest
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION, write_library

import tasks.retrieval.providers.registry  # noqa: F401  (the providers declare their settings: their keys are secrets)
from tasks.common.settings import Settings

SEARX_USER, SEARX_PASSWORD, SEARX_TOKEN = "searx-user", "searx-pa55-Zq81", "searx-tok-7Hd02k"
# Parameters named like headers, and one named like nothing known: all secrets.
SEARX_PARAMS = {"private-token": "searx-private-Tn63", "x-api-key": "searx-xkey-Qe28", "instance": "searx-inst-Wb17"}
LLM_KEY, LLM_URL_KEY = "sk-llm-header-Vb83nQ", "llm-url-key-Pw49xe"
UNUSED_KEYS = {"TAVILY_API_KEY": "tvly-unused-Kr27", "BRAVE_API_KEY": "brave-unused-Mz55",
               "OPENROUTER_API_KEY": "sk-or-unused-Jq61", "THENEWSAPI_TOKEN": "news-unused-Lx90"}


class EchoingServices(BaseHTTPRequestHandler):
    """SearXNG under /searx, result pages under /page, an LLM under /llm."""

    def do_GET(self):  # noqa: N802
        url = urlsplit(self.path)
        if url.path == "/searx/search":
            return self.searx(parse_qs(url.query))
        if url.path.startswith("/page/"):
            return self.send(200, "text/html", (
                f"<html><body><article><h1>Solar notes</h1><p>{'Solar panels and battery storage. ' * 20}"
                f"</p><p>Request seen: {self.path} {dict(self.headers)}</p></article></body></html>").encode())
        self.send(404, "text/plain", b"?")

    def searx(self, query: dict) -> None:
        expected = "Basic " + base64.b64encode(f"{SEARX_USER}:{SEARX_PASSWORD}".encode()).decode()
        if self.headers.get("Authorization") != expected or query.get("token") != [SEARX_TOKEN] or \
                any(query.get(name) != [value] for name, value in SEARX_PARAMS.items()):
            return self.send(401, "text/plain", b"credentials missing")
        self.server.searx_calls += 1
        if query.get("categories") == ["news"]:  # one failing intent: a failed item names the endpoint
            return self.send(500, "text/plain", f"engine crashed on {self.path}".encode())
        port = self.server.server_address[1]
        results = [{"url": f"http://127.0.0.1:{port}/page/{n}", "title": f"Solar panels and storage {n}",
                    "content": f"echo {self.path} {self.headers.get('Authorization')}", "score": 1.0 / n,
                    "engines": ["fake"]} for n in (1, 2, 3)]
        self.send(200, "application/json", json.dumps({"results": results}).encode())

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        if not urlsplit(self.path).path == "/llm/v1/chat/completions":
            return self.send(404, "text/plain", b"?")
        self.server.llm_calls += 1
        echo = f"You sent {self.command} {self.path} with headers {dict(self.headers)} and body {body}"
        doc = {"id": "x", "object": "chat.completion", "model": "echo",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": echo}}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        self.send(200, "application/json", json.dumps(doc).encode())

    def send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def services():
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoingServices)
    server.daemon_threads = True
    server.searx_calls = server.llm_calls = 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def readable_text(path: Path) -> str:
    """What a file holds, in a form a substring search can trust: Parquet
    and the catalog compress strings, so they are read as tables."""
    if path.suffix == ".parquet":
        return repr(pq.read_table(path).to_pylist())
    return path.read_bytes().decode("latin-1")


def catalog_text(lake) -> str:
    tables = [r[0] for r in lake.rows("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'")]
    assert len(tables) > 5
    return "\n".join(repr(lake.rows(f'SELECT CAST(COLUMNS(*) AS VARCHAR) FROM "{t}"')) for t in tables)


def test_no_configured_secret_reaches_the_home_prefect_or_the_output(cli, lake, tmp_path, monkeypatch, services):
    port = services.server_address[1]
    env = {
        "SEARXNG_URL": f"http://{SEARX_USER}:{SEARX_PASSWORD}@127.0.0.1:{port}/searx?token={SEARX_TOKEN}&"
                       + "&".join(f"{name}={value}" for name, value in SEARX_PARAMS.items()),
        "SEARCHLAKE_LLM_BASE_URL": f"http://127.0.0.1:{port}/llm/v1?api_key={LLM_URL_KEY}",
        "SEARCHLAKE_LLM_API_KEY": LLM_KEY,
        "SEARCHLAKE_LLM_MODEL": "echo",
        "SEARCHLAKE_FETCH_CONTENT": "true",
        "SEARCHLAKE_HTTP_RETRIES": "0",
        **UNUSED_KEYS,
    }
    for name in PROVIDER_KEYS + BUDGET_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    secrets = Settings().secret_values()  # every secret the one settings object knows
    assert {SEARX_PASSWORD, SEARX_TOKEN, LLM_KEY, LLM_URL_KEY, *UNUSED_KEYS.values(),
            *SEARX_PARAMS.values()} <= set(secrets)

    prefect_home = tmp_path / "prefect-home"
    # Not cli.run: Prefect's DEBUG logs, asked for here, show tracebacks of their own.
    done = subprocess.run(
        cli.command("research", QUESTION, "--library", str(write_library(tmp_path / "library")),
                    "--providers", "library,searxng", "--task-id", "leaky", "--target", "3"),
        capture_output=True, text=True, timeout=900, cwd=cli.cwd,
        env=cli.env(PREFECT_HOME=str(prefect_home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180",
                    # Prefect's logs at their most talkative, httpx's request lines among them.
                    PREFECT_LOGGING_LEVEL="DEBUG", PREFECT_LOGGING_EXTRA_LOGGERS="httpx,tasks", **env))
    assert done.returncode == 0, done.stdout + done.stderr
    assert services.searx_calls and services.llm_calls  # the secrets really travelled

    # The echoes were stored — scrubbed — and the failed call names the bare endpoint.
    [plan] = lake.dicts("SELECT raw_answer FROM plans WHERE task_id = 'leaky'")
    assert plan["raw_answer"].startswith("You sent POST /llm/v1/chat/completions")
    failed = lake.dicts("SELECT url, message FROM error_log WHERE task_id = 'leaky' AND provider = 'searxng'")
    assert failed and {row["url"] for row in failed} == {f"http://127.0.0.1:{port}/searx/search"}

    places = {"output": done.stdout + done.stderr, "catalog": catalog_text(lake)}
    for root in (Path(lake.settings.home), prefect_home):
        for path in root.rglob("*"):
            if path.is_file():
                places[str(path)] = readable_text(path)
    assert any(name.endswith("planner_answer.txt") for name in places)
    assert any(name.endswith(".parquet") for name in places) and any(name.endswith(".db") for name in places)
    for secret in secrets:
        leaks = [name for name, text in places.items() if secret in text]
        assert not leaks, f"{secret!r} found in {leaks}"
