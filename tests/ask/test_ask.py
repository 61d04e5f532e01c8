"""Single-shot search + summary against a replayed OpenRouter.

OpenRouter is replaced at the network edge only: an httpx.MockTransport that
answers with the documented response shape (choices[0].message.annotations[]
of type url_citation, usage.cost, the error body, Retry-After), or, for the
timeout, a real server on 127.0.0.1 that answers too late. Everything behind
the transport (retries, catalog, lake, landing) is the real code.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

import tasks.common.http
from schemas.ask import AskOptions
from tasks.ask.single_shot import ASK_STEP, ASK_STEPS, AskBudgetExceeded, AskError, ask
from tasks.lake.catalog import open_catalog
from tasks.common.settings import Settings
from tasks.server.events import ProgressTracker

KEY = "sk-or-v1-test-secret-4f7c2a9e1b3d5f60"
BASE = "https://openrouter.test/api/v1"

ANSWER = ("DuckDB is an in-process analytical database [duckdb.org](https://duckdb.org/why_duckdb). "
          "It reads Parquet directly [example.com](https://www.example.com/parquet?utm_source=x).")
ANNOTATIONS = [
    {"type": "url_citation", "url_citation": {
        "url": "https://duckdb.org/why_duckdb", "title": "Why DuckDB",
        "content": "DuckDB is an in-process SQL OLAP database management system. [...] Simple and portable.",
        "start_index": 44, "end_index": 83}},
    {"type": "url_citation", "url_citation": {
        "url": "https://www.example.com/parquet?utm_source=x", "title": "Reading Parquet",
        "start_index": 110, "end_index": 160}},
]


def completion(content: str = ANSWER, annotations: list | None = ANNOTATIONS, cost: float | None = 0.0123,
               **usage_extra) -> dict:
    """A chat completion as OpenRouter documents it."""
    message = {"role": "assistant", "content": content}
    if annotations is not None:
        message["annotations"] = annotations
    usage = {"prompt_tokens": 1450, "completion_tokens": 120, "total_tokens": 1570,
             "cost_details": {"upstream_inference_cost": None}, **usage_extra}
    if cost is not None:
        usage["cost"] = cost
    return {"id": "gen-1730000000-abc", "object": "chat.completion", "created": 1730000000,
            "model": "openai/gpt-4o-mini", "provider": "OpenAI",
            "choices": [{"index": 0, "finish_reason": "stop", "native_finish_reason": "stop", "message": message}],
            "usage": usage}


def error_body(code: int, message: str, error_type: str | None = None) -> dict:
    metadata = {"error_type": error_type} if error_type else {}
    return {"error": {"code": code, "message": message, "metadata": metadata}}


class FakeOpenRouter:
    """Replays queued responses and keeps every request it was sent."""

    def __init__(self, *responses: httpx.Response | Exception):
        self.queue = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    @property
    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


def ok(doc: dict | None = None, **headers) -> httpx.Response:
    return httpx.Response(200, json=completion() if doc is None else doc, headers=headers)


def failing(status: int, message: str = "upstream trouble", error_type: str | None = None,
            **headers) -> httpx.Response:
    return httpx.Response(status, json=error_body(status, message, error_type), headers=headers)


@pytest.fixture
def ask_settings(settings, monkeypatch) -> Settings:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("OPENROUTER_BASE_URL", BASE)
    return Settings()


@pytest.fixture(autouse=True)
def waits(monkeypatch) -> list[float]:
    """Retry waits, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(tasks.common.http, "_sleep", slept.append)
    return slept


def run_ask(settings: Settings, fake: FakeOpenRouter | None, question: str = "What is DuckDB?", **options):
    return ask(settings, question, AskOptions(**options), client=fake.client() if fake else None)


def message_rows(lake) -> list[dict]:
    return lake.dicts("SELECT * FROM ask_messages ORDER BY created_at")


# -- the request ----------------------------------------------------------------

def test_one_request_with_the_web_plugin_and_default_options(ask_settings, lake):
    fake = FakeOpenRouter(ok())
    result = run_ask(ask_settings, fake)

    assert len(fake.requests) == 1
    request = fake.requests[0]
    assert str(request.url) == f"{BASE}/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.extensions["timeout"]["read"] == ask_settings.ask_timeout
    body = fake.bodies[0]
    assert body["model"] == "openai/gpt-4o-mini"
    assert body["messages"] == [{"role": "user", "content": "What is DuckDB?"}]
    # engine left out: OpenRouter picks native search when the model has it, else Exa
    assert body["plugins"] == [{"id": "web", "max_results": 5}]
    assert body["web_search_options"] == {"search_context_size": "high"}
    assert "tools" not in body
    assert (result.status, result.request_count, result.engine) == ("ok", 1, "auto")


def test_per_call_options_override_the_settings(ask_settings, lake):
    fake = FakeOpenRouter(ok())
    run_ask(ask_settings, fake, max_results=3, search_context_size="low", model="anthropic/claude-3.5-haiku",
            engine="exa")

    body = fake.bodies[0]
    assert body["model"] == "anthropic/claude-3.5-haiku"
    assert body["plugins"] == [{"id": "web", "max_results": 3, "engine": "exa"}]
    assert body["web_search_options"] == {"search_context_size": "low"}
    [row] = message_rows(lake)
    assert (row["model"], row["engine"], row["search_context_size"], row["max_results"]) == (
        "anthropic/claude-3.5-haiku", "exa", "low", 3)


def test_settings_change_the_defaults(ask_settings, lake, monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_ASK_MAX_RESULTS", "8")
    monkeypatch.setenv("SEARCHLAKE_ASK_SEARCH_CONTEXT_SIZE", "medium")
    monkeypatch.setenv("SEARCHLAKE_ASK_MODEL", "openai/gpt-4o")
    fake = FakeOpenRouter(ok())
    run_ask(Settings(), fake)
    body = fake.bodies[0]
    assert (body["model"], body["plugins"][0]["max_results"], body["web_search_options"]["search_context_size"]) == (
        "openai/gpt-4o", 8, "medium")


def test_server_tool_form_when_chosen(ask_settings, lake):
    fake = FakeOpenRouter(ok(completion(server_tool_use={"web_search_requests": 2})))
    run_ask(ask_settings, fake, search_mode="server_tool", max_results=4)

    body = fake.bodies[0]
    assert body["tools"] == [{"type": "openrouter:web_search",
                              "parameters": {"max_results": 4, "search_context_size": "high"}}]
    assert "plugins" not in body and "web_search_options" not in body
    [row] = message_rows(lake)
    assert (row["search_mode"], row["web_search_requests"]) == ("server_tool", 2)


def test_server_tool_with_zero_results_searches_nothing(ask_settings, lake):
    fake = FakeOpenRouter(ok())
    run_ask(ask_settings, fake, search_mode="server_tool", max_results=0)
    assert "tools" not in fake.bodies[0]


@pytest.mark.parametrize("bad", [-1, 11, 100])
def test_max_results_outside_0_to_10_is_rejected(bad, ask_settings, monkeypatch):
    with pytest.raises(ValidationError):
        AskOptions(max_results=bad)
    monkeypatch.setenv("SEARCHLAKE_ASK_MAX_RESULTS", str(bad))
    with pytest.raises(ValidationError):
        Settings()


def test_bad_context_size_is_rejected():
    with pytest.raises(ValidationError):
        AskOptions(search_context_size="huge")


# -- the answer, its citations and the bundle -------------------------------------

def test_citations_are_stored_with_their_domain_and_linked_to_the_message(ask_settings, lake):
    result = run_ask(ask_settings, FakeOpenRouter(ok()))

    [message] = message_rows(lake)
    assert message["message_id"] == result.message_id
    assert message["answer"] == ANSWER
    assert (message["status"], message["citation_count"], message["no_citations"]) == ("ok", 2, False)
    assert (message["cost"], message["prompt_tokens"], message["completion_tokens"]) == (0.0123, 1450, 120)
    assert message["request_count"] == 1 and message["failure_reason"] is None

    cites = lake.dicts("SELECT * FROM citations ORDER BY position")
    assert [c["message_id"] for c in cites] == [result.message_id] * 2
    assert [c["domain"] for c in cites] == ["duckdb.org", "example.com"]
    assert [(c["start_index"], c["end_index"]) for c in cites] == [(44, 83), (110, 160)]
    assert cites[0]["content"].startswith("DuckDB is an in-process") and cites[1]["content"] is None
    assert cites[0]["title"] == "Why DuckDB" and cites[0]["fetched_at"] is not None
    assert lake.count("review_queue") == 0


def test_the_answer_lands_as_a_bundle_like_any_search(ask_settings, lake):
    result = run_ask(ask_settings, FakeOpenRouter(ok()))

    assert re.fullmatch(r"ask-\d{8}-\d{6}-[0-9a-f]{4}", result.task_id)
    [bundle] = lake.dicts("SELECT * FROM bundles WHERE task_id = ?", [result.task_id])
    assert (bundle["provider"], bundle["query_intent"]) == ("openrouter", "web")
    assert bundle["query_text"] == "What is DuckDB?"
    assert bundle["query_id"] == result.query_id
    items = lake.dicts("SELECT * FROM results WHERE task_id = ? ORDER BY rank", [result.task_id])
    assert [i["url"] for i in items] == [
        "https://duckdb.org/why_duckdb", "https://www.example.com/parquet?utm_source=x"]
    assert [i["score_final"] for i in items] == [1.0, 0.5]
    assert items[0]["snippet"].startswith("DuckDB is an in-process")
    raw = json.loads((Path(ask_settings.lake_root) / bundle["raw_path"]).read_text())
    assert raw["answer"] == ANSWER and raw["message_id"] == result.message_id


def test_a_given_task_id_is_used_and_several_asks_share_it(ask_settings, lake):
    fake = FakeOpenRouter(ok())
    first = run_ask(ask_settings, fake, task_id="t-ask")
    second = run_ask(ask_settings, fake, "And what is Polars?", task_id="t-ask")
    assert first.task_id == second.task_id == "t-ask" and first.query_id != second.query_id
    assert lake.count("bundles") == 2 and lake.count("ask_messages") == 2


def test_a_page_cited_twice_is_one_bundle_item_and_odd_urls_stay_out_of_the_lake(ask_settings, lake):
    annotations = ANNOTATIONS + [
        {"type": "url_citation", "url_citation": {"url": "https://duckdb.org/why_duckdb", "title": "again",
                                                  "start_index": 1, "end_index": 5}},
        {"type": "url_citation", "url_citation": {"url": "javascript:alert(1)", "title": "odd"}},
        {"type": "url_citation", "url": "https://flat.example.org/x", "title": "flat shape"},
        {"type": "url_citation", "url_citation": {"title": "no url"}},
        {"type": "file_citation", "file_citation": {"file_id": "f1"}},
    ]
    result = run_ask(ask_settings, FakeOpenRouter(ok(completion(annotations=annotations))))

    assert lake.count("citations") == 5  # every url_citation with a URL is kept for audit
    urls = [r[0] for r in lake.rows("SELECT url FROM results WHERE task_id = ? ORDER BY rank", [result.task_id])]
    assert urls == ["https://duckdb.org/why_duckdb", "https://www.example.com/parquet?utm_source=x",
                    "https://flat.example.org/x"]
    assert lake.count("quarantine") == 0


def test_an_answer_without_citations_is_kept_marked_and_queued_for_review(ask_settings, lake, caplog):
    doc = completion(content="DuckDB is a database.", annotations=None)
    with caplog.at_level(logging.INFO, logger="tasks.ask.single_shot"):
        result = run_ask(ask_settings, FakeOpenRouter(ok(doc)))

    assert result.no_citations and result.answer == "DuckDB is a database." and result.status == "ok"
    [message] = message_rows(lake)
    assert (message["no_citations"], message["citation_count"], message["status"]) == (True, 0, "ok")
    [review] = lake.dicts("SELECT * FROM review_queue")
    assert (review["message_id"], review["task_id"]) == (result.message_id, result.task_id)
    assert review["reason"] == "no_citations"
    assert json.loads(review["raw_response"])["choices"][0]["message"]["content"] == "DuckDB is a database."
    assert lake.count("bundles") == 1  # the answer still lands, with no items
    assert "no_citations=True" in caplog.text


def test_the_exchange_is_kept_in_the_lake_for_audit(ask_settings, lake):
    result = run_ask(ask_settings, FakeOpenRouter(ok()))
    [message] = message_rows(lake)
    assert message["raw_path"] == f"runs/task_id={result.task_id}/run_id={result.message_id}/openrouter_response.json"
    audit = json.loads((Path(ask_settings.lake_root) / message["raw_path"]).read_text())
    assert audit["request"]["plugins"] == [{"id": "web", "max_results": 5}]
    assert audit["response"]["usage"]["cost"] == 0.0123


# -- failures -------------------------------------------------------------------------

def test_a_503_then_a_200_is_two_requests_and_a_success(ask_settings, lake, waits):
    fake = FakeOpenRouter(failing(503, "no provider available", "provider_unavailable", **{"Retry-After": "2"}), ok())
    result = run_ask(ask_settings, fake)

    assert len(fake.requests) == 2 and waits == [2.0]
    assert (result.status, result.request_count) == ("ok", 2)
    [message] = message_rows(lake)
    assert (message["status"], message["request_count"], message["http_status"]) == ("ok", 2, 200)
    attempts = json.loads(message["attempts"])
    assert [a["http_status"] for a in attempts] == [503, 200] and attempts[0]["retry_after"] == 2.0


def test_a_long_retry_after_is_capped(ask_settings, lake, waits):
    run_ask(ask_settings, FakeOpenRouter(failing(429, "slow down", "rate_limit_exceeded", **{"Retry-After": "3600"}),
                                         ok()))
    assert waits == [ask_settings.ask_retry_after_max]


def test_two_500s_fail_with_one_clear_line_and_a_failed_row(ask_settings, lake):
    fake = FakeOpenRouter(failing(500, "Internal Server Error"))
    with pytest.raises(AskError) as caught:
        run_ask(ask_settings, fake)

    message = str(caught.value)
    assert "\n" not in message
    assert "ask failed after 2 request(s) to OpenRouter: HTTP 500: Internal Server Error" in message
    assert len(fake.requests) == 2
    [row] = message_rows(lake)
    assert (row["status"], row["request_count"], row["http_status"]) == ("failed", 2, 500)
    assert row["failure_reason"] == "HTTP 500: Internal Server Error" and row["answer"] is None
    assert row["message_id"] == caught.value.message_id
    assert lake.count("bundles") == 0 and lake.count("citations") == 0


def test_a_bad_key_is_not_retried(ask_settings, lake):
    fake = FakeOpenRouter(failing(401, "No auth credentials found", "authentication"))
    with pytest.raises(AskError, match="HTTP 401: authentication: No auth credentials found"):
        run_ask(ask_settings, fake)
    assert len(fake.requests) == 1
    assert message_rows(lake)[0]["request_count"] == 1


def test_an_error_inside_a_200_and_a_network_error_are_retried_once(ask_settings, lake):
    broken = ok({"error": {"code": 502, "message": "upstream stream broke"},
                 "choices": [{"finish_reason": "error", "message": {"content": ""}}]})
    fake = FakeOpenRouter(broken, httpx.ConnectError("connection refused"))
    with pytest.raises(AskError, match="network error: ConnectError"):
        run_ask(ask_settings, fake)
    attempts = json.loads(message_rows(lake)[0]["attempts"])
    assert attempts[0]["error"] == "error in response: upstream stream broke"


class SlowHandler(BaseHTTPRequestHandler):
    """An OpenRouter that takes longer than the client waits."""

    def do_POST(self):  # noqa: N802
        self.server.hits += 1
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(0.6)
        body = json.dumps(completion()).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_openrouter():
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowHandler)
    server.daemon_threads = True
    server.hits = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_timeout_is_retried_once_then_fails(ask_settings, lake, slow_openrouter, monkeypatch):
    monkeypatch.setenv("OPENROUTER_BASE_URL", f"http://127.0.0.1:{slow_openrouter.server_address[1]}/api/v1")
    settings = Settings()
    with pytest.raises(AskError, match=r"2 request\(s\) to OpenRouter: no answer within 0.2 s \(timeout\)"):
        run_ask(settings, None, timeout=0.2)  # the real client ask() builds itself
    assert slow_openrouter.hits == 2
    [row] = message_rows(lake)
    assert (row["status"], row["request_count"], row["http_status"]) == ("failed", 2, None)


def test_a_cost_over_the_cap_is_recorded_and_stops_the_run(ask_settings, lake):
    with pytest.raises(AskBudgetExceeded) as caught:
        run_ask(ask_settings, FakeOpenRouter(ok(completion(cost=0.2))))

    assert "ask stopped: the answer cost $0.2000, above the $0.0500 cap" in str(caught.value)
    [row] = message_rows(lake)
    assert (row["status"], row["cost"], row["max_cost"]) == ("over_budget", 0.2, 0.05)
    assert row["answer"] == ANSWER and row["citation_count"] == 2  # paid for, so kept for audit
    assert lake.count("bundles") == 0  # but nothing lands: the run is over budget


def test_a_per_call_cap_lets_a_dearer_answer_through(ask_settings, lake):
    result = run_ask(ask_settings, FakeOpenRouter(ok(completion(cost=0.2))), max_cost=0.5)
    assert result.status == "ok" and result.cost == 0.2


def test_no_key_means_no_request(settings, lake, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("SEARCHLAKE_OPENROUTER_API_KEY", raising=False)
    fake = FakeOpenRouter(ok())
    with pytest.raises(AskError, match="OPENROUTER_API_KEY is not set"):
        run_ask(Settings(), fake)
    assert fake.requests == []


# -- secrets and events ------------------------------------------------------------------

def test_the_api_key_reaches_no_table_no_lake_file_and_no_log(ask_settings, lake, caplog):
    echo = failing(400, f"invalid header Authorization: Bearer {KEY}")  # a server that echoes the key
    with caplog.at_level(logging.DEBUG):
        run_ask(ask_settings, FakeOpenRouter(ok()))
        run_ask(ask_settings, FakeOpenRouter(ok(completion(annotations=[]))))
        with pytest.raises(AskError) as caught:
            run_ask(ask_settings, FakeOpenRouter(echo))
    assert KEY not in str(caught.value)
    assert KEY not in caplog.text

    tables = [r[0] for r in lake.rows(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'")]
    assert {"ask_message_log", "ask_citation_log", "ask_review_log"} <= set(tables)
    for table in tables:
        dump = lake.rows(f'SELECT CAST(COLUMNS(*) AS VARCHAR) FROM "{table}"')
        assert KEY not in repr(dump), table
    for path in Path(ask_settings.lake_root).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    catalog = Path(ask_settings.catalog_path)
    for path in catalog.parent.glob(catalog.name + "*"):  # its write-ahead log too
        assert KEY.encode() not in path.read_bytes(), path


def test_a_tracker_sees_one_search_summary_step(ask_settings, lake):
    tracker = ProgressTracker(ASK_STEPS)
    ask(ask_settings, "What is DuckDB?", AskOptions(), client=FakeOpenRouter(ok()).client(), tracker=tracker)
    start, done = tracker.events
    assert (start.step_type, start.status, done.status, done.progress) == (ASK_STEP, "start", "complete", 1.0)
    assert len(done.payload.result["citations"]) == 2 and done.payload.metadata["citationCount"] == 2


def test_a_failed_ask_reports_an_error_event(ask_settings, lake):
    tracker = ProgressTracker(ASK_STEPS)
    with pytest.raises(AskError):
        ask(ask_settings, "What is DuckDB?", AskOptions(),
            client=FakeOpenRouter(failing(502, "bad gateway")).client(), tracker=tracker)
    error = tracker.events[-1].to_wire()
    assert error["status"] == "error" and "HTTP 502" in error["payload"]["error"]
    assert error["payload"]["result"] is None


def test_the_catalog_is_free_while_openrouter_answers(ask_settings, lake):
    """Analysts' SQL (and other commands) are never locked out by a slow model."""
    seen = []

    def answer_while_probing(request: httpx.Request) -> httpx.Response:
        with open_catalog(ask_settings.model_copy(update={"lock_timeout": 0}), "probe", read_only=True) as catalog:
            seen.append(catalog.con.execute("select count(*) from ask_messages").fetchone()[0])
        return ok()

    result = ask(ask_settings, "What is DuckDB?", AskOptions(),
                 client=httpx.Client(transport=httpx.MockTransport(answer_while_probing)))
    assert seen == [0] and result.status == "ok"
    assert lake.count("ask_messages") == 1


def test_an_answer_echoing_the_key_is_stored_without_it(ask_settings, lake):
    echoed = completion(content=f"You sent Authorization: Bearer {KEY} and asked about DuckDB.")
    result = run_ask(ask_settings, FakeOpenRouter(ok(echoed)))
    assert KEY not in result.answer and "asked about DuckDB" in result.answer
    [row] = message_rows(lake)
    assert KEY not in row["answer"]
    for path in Path(ask_settings.lake_root).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
