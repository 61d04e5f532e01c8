"""`searchlake serve`: a real server on 127.0.0.1 (port 0), read with httpx
while another thread writes the run's events."""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time

import httpx
import pytest

from tasks.common.settings import Settings
from tasks.server.events import EventLog, ProgressTracker
from tasks.server.serve import make_server

STEPS = [("plan", 1, "Plan"), ("deep_search", 2, "Search")]


@pytest.fixture
def server(settings):
    with make_server(settings, "127.0.0.1", 0, poll=0.02, keepalive=0.2) as srv:
        yield srv


def data_events(lines) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in lines if line.startswith("data: ")]


def write_run(settings, task_id="t1", run_id="r1", finish=True) -> None:
    with EventLog.for_run(settings, task_id, run_id) as log:
        tracker = ProgressTracker(STEPS, sink=log)
        tracker.begin()
        tracker.start("plan")
        tracker.complete("plan")
        if finish:
            tracker.finish()


def raw_get(server, path: str) -> tuple[int, bytes]:
    """GET with the path sent exactly as written (httpx would normalise '..')."""
    conn = http.client.HTTPConnection(*server.sock.getsockname()[:2], timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_health(server, settings):
    response = httpx.get(f"{server.url}/health", timeout=5)
    assert response.status_code == 200 and response.json() == {"status": "ok", "home": str(settings.home)}


def test_runs_lists_the_runs_with_events(server, settings):
    assert httpx.get(f"{server.url}/runs", timeout=5).json() == {"runs": []}
    write_run(settings, "t1", "r1")
    write_run(settings, "t2", "r9")
    runs = httpx.get(f"{server.url}/runs", timeout=5).json()["runs"]
    assert {(r["task_id"], r["run_id"]) for r in runs} == {("t1", "r1"), ("t2", "r9")}
    assert {r["events"] for r in runs} == {"/runs/t1/r1/events", "/runs/t2/r9/events"}


def test_the_stream_follows_the_file_live_until_the_pipeline_ends(server, settings):
    log = EventLog.for_run(settings, "t1", "live")
    tracker = ProgressTracker(STEPS, sink=log)
    tracker.begin()
    first_seen = threading.Event()

    def writer():
        # Only write the rest once the reader holds the first event: the rest
        # can then only reach it by the server following the file.
        assert first_seen.wait(5)
        tracker.start("plan")
        tracker.complete("plan")
        tracker.advance("deep_search", 0.5, chunk="half")
        tracker.complete("deep_search", result={"notes": []})
        tracker.finish()
        log.close()

    thread = threading.Thread(target=writer)
    thread.start()
    received = []
    with httpx.stream("GET", f"{server.url}/runs/t1/live/events", timeout=5) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                received.append(json.loads(line[6:]))
                first_seen.set()
    thread.join(timeout=5)

    assert [(e["stepType"], e["status"]) for e in received] == [
        ("pipeline", "start"), ("plan", "start"), ("plan", "complete"), ("deep_search", "progress"),
        ("deep_search", "complete"), ("pipeline", "complete")]
    assert [e["progress"] for e in received] == pytest.approx([0, 0, 1 / 3, 2 / 3, 1, 1])
    assert received[3]["payload"]["chunk"] == "half"


def test_events_are_numbered_and_last_event_id_resumes(server, settings):
    write_run(settings)
    with httpx.stream("GET", f"{server.url}/runs/t1/r1/events", timeout=5) as response:
        lines = list(response.iter_lines())
    assert [line for line in lines if line.startswith("id: ")] == ["id: 1", "id: 2", "id: 3", "id: 4"]
    with httpx.stream("GET", f"{server.url}/runs/t1/r1/events", headers={"Last-Event-ID": "2"},
                      timeout=5) as response:
        resumed = data_events(response.iter_lines())
    assert [(e["stepType"], e["status"]) for e in resumed] == [("plan", "complete"), ("pipeline", "complete")]


def test_follow_0_sends_what_is_there_and_closes(server, settings):
    write_run(settings, finish=False)
    with httpx.stream("GET", f"{server.url}/runs/t1/r1/events?follow=0", timeout=5) as response:
        assert len(data_events(response.iter_lines())) == 3


def test_an_idle_stream_gets_keep_alives(server, settings):
    write_run(settings, finish=False)
    with httpx.stream("GET", f"{server.url}/runs/t1/r1/events", timeout=5) as response:
        for line in response.iter_lines():
            if line.startswith(":"):
                assert line.startswith(": ping")
                break


def test_an_error_ends_the_stream_with_a_null_result(server, settings):
    with EventLog.for_run(settings, "t1", "bad") as log:
        tracker = ProgressTracker(STEPS, sink=log)
        tracker.begin()
        tracker.error("plan", "planner down")
        tracker.fail("planner down")
    with httpx.stream("GET", f"{server.url}/runs/t1/bad/events", timeout=5) as response:
        events = data_events(response.iter_lines())
    assert events[-1]["status"] == "error" and events[-1]["payload"] == {"error": "planner down", "result": None}


def test_a_run_without_events_is_404(server):
    response = httpx.get(f"{server.url}/runs/t1/nope/events", timeout=5)
    assert response.status_code == 404 and "no events" in response.json()["error"]


@pytest.mark.parametrize("path", [
    "/runs/%2e%2e/r1/events",
    "/runs/t1/.hidden/events",
    "/runs/t%001/r1/events",
])
def test_ids_that_are_not_identifiers_are_refused(server, settings, path):
    write_run(settings)
    status, body = raw_get(server, path)
    assert status == 400 and b"invalid run id" in body


@pytest.mark.parametrize("path", ["/runs/..%2F..%2Fetc/r1/events", "/runs/t1/%2e%2e%2f%2e%2e/events"])
def test_an_encoded_slash_in_an_id_reaches_no_file(server, settings, path):
    # the server decodes %2F before routing: the path then has too many parts
    write_run(settings)
    status, body = raw_get(server, path)
    assert status in (400, 404) and b"data:" not in body


@pytest.mark.parametrize("path", ["/runs/../../etc/passwd", "/runs/t1/r1/../../../events", "/etc/passwd"])
def test_other_paths_are_404(server, settings, path):
    write_run(settings)
    status, _ = raw_get(server, path)
    assert status == 404


def test_a_client_that_leaves_does_not_stop_the_server(server, settings):
    write_run(settings, finish=False)
    with httpx.stream("GET", f"{server.url}/runs/t1/r1/events", timeout=5) as response:
        next(response.iter_lines())
    # the abandoned stream notices on its next keep-alive; the server keeps serving
    assert httpx.get(f"{server.url}/health", timeout=5).status_code == 200


def test_the_server_binds_to_loopback_by_default(settings):
    srv = make_server(settings, port=0)
    try:
        assert srv.sock.getsockname()[0] == "127.0.0.1"
    finally:
        srv.sock.close()


# -- the page's guards ---------------------------------------------------------

@pytest.fixture
def page_server(settings):
    from flows.launcher import ResearchLauncher
    with make_server(settings, "127.0.0.1", 0, ResearchLauncher(settings)) as srv:
        yield srv


def test_every_answer_carries_a_strict_content_security_policy(page_server):
    for path in ("/", "/runs", "/static/app.css"):
        headers = httpx.get(page_server.url + path, timeout=10).headers
        policy = headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self';" in policy and "unsafe" not in policy
        assert headers["x-content-type-options"] == "nosniff"


def test_a_form_posted_from_another_site_starts_nothing(page_server):
    response = httpx.post(page_server.url + "/research", data={"question": "anything"},
                          headers={"Origin": "http://evil.example"}, timeout=10)
    assert response.status_code == 403
    response = httpx.post(page_server.url + "/api/research", json={"question": "anything"},
                          headers={"Sec-Fetch-Site": "cross-site"}, timeout=10)
    assert response.status_code == 403


def test_a_request_for_another_host_name_is_refused(page_server):
    # a page on evil.example that resolves its name to 127.0.0.1 (DNS rebinding)
    response = httpx.get(page_server.url + "/runs", headers={"Host": "evil.example"}, timeout=10)
    assert response.status_code == 400


def test_a_question_that_cannot_start_is_one_line_on_the_page(page_server):
    response = httpx.post(page_server.url + "/research", timeout=10, headers={"Origin": page_server.url},
                          data={"question": "solar panels", "providers": ["library", "goggle"]})
    assert response.status_code == 400
    assert "unknown provider &#39;goggle&#39;" in response.text or "unknown provider 'goggle'" in response.text
    assert 'value="goggle"' not in response.text  # only known providers are offered


def test_the_api_runs_nothing_for_a_caller_with_other_settings(page_server):
    response = httpx.post(page_server.url + "/api/research", timeout=10, headers={"Origin": page_server.url},
                          json={"question": "solar panels", "fingerprint": "not-these-settings"})
    assert response.status_code == 409


# -- slow clients ------------------------------------------------------------------

@pytest.fixture
def impatient_server(settings, monkeypatch):
    """A server that gives a request 1 s to arrive."""
    monkeypatch.setenv("SEARCHLAKE_SERVE_REQUEST_TIMEOUT", "1")
    with make_server(Settings(), "127.0.0.1", 0, poll=0.02, keepalive=0.2) as srv:
        yield srv


def connected(server) -> socket.socket:
    return socket.create_connection(server.sock.getsockname()[:2], timeout=5)


def closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> bool:
    """Whether the server closes the connection within `seconds`, while the
    client sends `trickle` a byte at a time, a byte every 0.2 s."""
    deadline = time.monotonic() + seconds
    pending = list(trickle)
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.2)
        if readable:
            try:
                return sock.recv(4096) == b""
            except ConnectionResetError:
                return True
        if pending:
            try:
                sock.send(bytes([pending.pop(0)]))
            except (BrokenPipeError, ConnectionResetError):
                return True
    return False


def test_a_client_that_sends_half_a_header_and_waits_is_cut_off(impatient_server):
    with connected(impatient_server) as sock:
        sock.sendall(b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Wait: ")
        assert closed_within(sock, 15)


def test_a_client_that_trickles_its_header_is_cut_off(impatient_server):
    with connected(impatient_server) as sock:
        sock.sendall(b"GET /runs HTTP/1.1\r\n")
        # a byte every 0.2 s: each would reset a timeout counted between bytes
        assert closed_within(sock, 15, trickle=b"X-Slow: " + b"a" * 200)


def test_a_client_that_never_sends_its_body_is_cut_off(impatient_server):
    with connected(impatient_server) as sock:
        sock.sendall(b"POST /api/research HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"question\"")
        assert closed_within(sock, 15)


def test_a_connection_that_never_says_anything_is_cut_off(impatient_server):
    with connected(impatient_server) as sock:
        assert closed_within(sock, 15)


def test_the_deadline_is_for_the_request_not_the_answer(impatient_server, settings):
    """A request that arrived in time is served as long as its answer takes
    (an event stream), and the connection serves the next request after."""
    write_run(settings, finish=False)
    started = time.monotonic()
    pings = 0
    with httpx.stream("GET", f"{impatient_server.url}/runs/t1/r1/events", timeout=5) as response:
        for line in response.iter_lines():
            pings += line.startswith(": ping")
            if time.monotonic() - started > 3:  # three times the deadline
                break
    assert pings > 3
    with httpx.Client(timeout=5) as client:  # one kept-alive connection
        assert client.get(f"{impatient_server.url}/health").status_code == 200
        time.sleep(0.5)
        assert client.get(f"{impatient_server.url}/health").status_code == 200
