"""Bad input to `searchlake serve` is a 4xx with a one-line reason, never a
500: the real app through Starlette's TestClient (which raises whatever the
app raises, so a 500 fails the test loudly), and a real uvicorn on 127.0.0.1
for bodies that must not be read at all."""

from __future__ import annotations

import asyncio
import http.client

import httpx
import pytest
from starlette.testclient import TestClient

from schemas.request import BudgetRequest, ResearchRequest
from tasks.common.settings import Settings
from tasks.server.handoff import fingerprint
from tasks.server.serve import build_app, make_server
from tasks.server.web import routes

PAGE = {"Origin": "http://127.0.0.1"}  # what the page's own forms and scripts send
JSON = {"content-type": "application/json"}
FORM = {"content-type": "application/x-www-form-urlencoded"}
NESTED = b"[" * 100_000 + b"]" * 100_000
SALT = "the server's salt"  # of its settings' fingerprint (tasks/server/handoff.py)


class Recorder:
    """A launcher that records what it was asked to start and starts nothing."""

    def __init__(self):
        self.started: list[tuple] = []

    def providers(self) -> list[str]:
        return ["library"]

    def can_ask(self) -> bool:
        return True

    def research(self, request) -> str:
        self.started.append(request)
        return "t-started"

    def ask(self, question: str) -> str:
        self.started.append((question,))
        return "t-asked"

    def launch_error(self, task_id: str) -> str | None:
        return "recorded only"


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(settings, recorder):
    with TestClient(build_app(settings, recorder, fingerprint_salt=SALT), base_url="http://127.0.0.1",
                    headers=PAGE) as test_client:
        yield test_client


def one_line_error(response: httpx.Response) -> str:
    message = response.json()["error"]
    assert message and "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize("body, status, words", [
    (b"[1,2,3]", 422, "JSON object"),
    (b'"hello"', 422, "JSON object"),
    (b"null", 422, "JSON object"),
    (b'{"question": "solar', 400, "not valid JSON"),
    (b'\xff\xfe{"question": 1}', 400, "not valid JSON"),
    (NESTED, 400, "not valid JSON"),
    (b'{"question": 7, "fingerprint": "x"}', 422, "question"),
    (b'{"question": "q", "fingerprint": "x", "task_id": "../etc"}', 422, "task_id"),
    (b'{"question": "q", "fingerprint": "x", "budget": [1]}', 422, "budget"),
    (b'{"question": "q", "fingerprint": "x", "providers": "library"}', 422, "providers"),
    (b'{"question": "q", "fingerprint": "x", "surprise": 1}', 422, "surprise"),
], ids=["list", "string", "null", "truncated", "not-utf8", "deeply-nested", "question-not-text", "bad-task-id",
        "budget-not-object", "providers-not-list", "unknown-field"])
def test_a_bad_research_body_is_a_4xx_with_one_line(client, recorder, body, status, words):
    response = client.post("/api/research", content=body, headers=JSON)
    assert response.status_code == status
    assert words in one_line_error(response)
    assert recorder.started == []


def test_a_body_that_is_not_json_is_refused(client, recorder):
    response = client.post("/api/research", content=b"question=x", headers=FORM)
    assert response.status_code == 415 and one_line_error(response) == "send JSON"


def test_a_good_body_reaches_the_launcher(client, recorder, settings):
    body = {"question": "solar", "fingerprint": fingerprint(settings, SALT), "providers": ["library"], "target": 3,
            "budget": {"timeout": 60}}
    response = client.post("/api/research", json=body)
    assert response.status_code == 503  # the recorder starts nothing, and says so
    # `timeout` is the name earlier versions of the command sent: still read as timeout_seconds
    assert recorder.started == [ResearchRequest(question="solar", providers=["library"], target=3,
                                                budget=BudgetRequest(timeout_seconds=60))]


def test_a_run_that_never_starts_is_answered_at_the_deadline(client, recorder, settings, monkeypatch):
    monkeypatch.setattr(routes, "FIRST_EVENT_DEADLINE", 0.2)
    monkeypatch.setattr(recorder, "launch_error", lambda task_id: None)  # started, but no event ever comes
    response = client.post("/api/research", json={"question": "solar", "fingerprint": fingerprint(settings, SALT)})
    assert response.status_code == 504
    assert response.json()["task_id"] == "t-started"
    assert "wrote no event" in one_line_error(response)


@pytest.mark.parametrize("path", ["/research", "/ask"])
@pytest.mark.parametrize("body, kind", [
    (b"question=%ff%fe&target=\xff", FORM["content-type"]),
    (b"--xx\r\nbroken", "multipart/form-data; boundary=xx"),
    (b"--xx\r\nbroken", "multipart/form-data"),
    (b"[1,2,3]", "application/json"),
], ids=["not-utf8", "broken-multipart", "no-boundary", "json-to-a-form"])
def test_a_bad_form_never_fails_the_server(client, recorder, path, body, kind):
    # forms are decoded leniently (undecodable bytes become U+FFFD): a 303 to a run is an answer too
    response = client.post(path, content=body, headers={"content-type": kind}, follow_redirects=False)
    assert response.status_code in (303, 400)
    assert "Traceback" not in response.text


# -- body size ------------------------------------------------------------------

def test_a_body_over_the_limit_is_refused_by_its_content_length(settings, recorder, monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_SERVE_MAX_BODY_BYTES", "2048")
    with make_server(Settings(), "127.0.0.1", 0, recorder) as server:
        # 100 MB announced, nothing sent: a server that waited to read it would never answer
        conn = http.client.HTTPConnection(*server.sock.getsockname()[:2], timeout=30)
        conn.putrequest("POST", "/api/research")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Origin", server.url)
        conn.putheader("Content-Length", str(100 * 1024 * 1024))
        conn.endheaders()
        response = conn.getresponse()
        answer = response.status, response.read()
        conn.close()
    assert answer == (413, b'{"error":"the request body is larger than 2048 bytes"}')
    assert recorder.started == []


def test_a_streamed_body_is_cut_off_at_the_limit(settings, recorder, monkeypatch):
    """Without a Content-Length the body is counted as it arrives, and the
    rest is never read."""
    monkeypatch.setenv("SEARCHLAKE_SERVE_MAX_BODY_BYTES", "4096")
    app = build_app(Settings(), recorder)
    pulled = []

    async def body():
        for n in range(100_000):  # 100 MB in 1 kB chunks
            pulled.append(n)
            yield b"[" * 1024

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1",
                                     headers=PAGE) as http:
            return await http.post("/api/research", content=body(), headers=JSON)

    response = asyncio.run(post())
    assert response.status_code == 413
    assert one_line_error(response) == "the request body is larger than 4096 bytes"
    assert len(pulled) < 10 and recorder.started == []


def test_a_form_over_the_limit_is_refused(settings, recorder, monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_SERVE_MAX_BODY_BYTES", "2048")
    with TestClient(build_app(Settings(), recorder), base_url="http://127.0.0.1", headers=PAGE) as test_client:
        response = test_client.post("/research", data={"question": "x" * 5000})
    assert response.status_code == 413 and response.text == "the request body is larger than 2048 bytes"
    assert recorder.started == []
