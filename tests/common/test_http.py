"""The shared client and the retrying request helper (tasks/common/http.py)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

import tasks.common.http
from tasks.common.settings import Settings
import tasks.retrieval.providers.registry  # noqa: F401  (the providers declare their settings: their keys are secrets)
from tasks.common.http import make_client, redact, request, request_json, retry_after_seconds, safe_url
from schemas.errors import RemoteError
from tests.net_helpers import TrickleServer, elapsed

KEY = "sk-TOPSECRET-123"
URL = "https://api.example.com/v1/search"


@pytest.fixture
def sleeps(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(tasks.common.http, "_sleep", waits.append)
    return waits


def client_for(*answers, timeout: float = 20.0) -> tuple[httpx.Client, list[httpx.Request]]:
    """A real client whose network is a script of answers (responses or exceptions)."""
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    settings = Settings(_env_file=None, http_timeout=timeout)
    return make_client(settings, transport=httpx.MockTransport(handler)), seen


def test_client_defaults_from_settings():
    client, seen = client_for(httpx.Response(200, json={}), timeout=7.5)
    assert client.timeout == httpx.Timeout(7.5)
    assert client.follow_redirects is False
    request_json(client, "GET", URL)
    assert seen[0].headers["User-Agent"].startswith("searchlake/")


def test_success_returns_parsed_json(sleeps):
    client, seen = client_for(httpx.Response(200, json={"ok": True}))
    assert request_json(client, "GET", URL, params={"q": "x"}) == {"ok": True}
    assert seen[0].url.params["q"] == "x" and sleeps == []


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_transient_status_retried_once_by_default(status, sleeps):
    client, seen = client_for(httpx.Response(status), httpx.Response(200, json={"n": 1}))
    assert request_json(client, "GET", URL) == {"n": 1}
    assert len(seen) == 2 and len(sleeps) == 1
    assert 0 < sleeps[0] <= tasks.common.http.MAX_RETRY_WAIT  # exponential backoff, no Retry-After


def test_retries_follow_setting(sleeps):
    client, seen = client_for(httpx.Response(503))
    with pytest.raises(RemoteError) as err:
        request(client, "GET", URL, retries=3)
    assert err.value.code == "http_503" and err.value.http_status == 503
    assert len(seen) == 4 and len(sleeps) == 3

    client, seen = client_for(httpx.Response(503))
    with pytest.raises(RemoteError):
        request(client, "GET", URL, retries=0)
    assert len(seen) == 1


def test_429_twice_is_http_429(sleeps):
    client, seen = client_for(httpx.Response(429, headers={"Retry-After": "1"}))
    with pytest.raises(RemoteError) as err:
        request(client, "GET", URL)
    assert err.value.code == "http_429" and len(seen) == 2 and sleeps == [1.0]


def test_retry_after_is_capped(sleeps):
    client, _ = client_for(httpx.Response(429, headers={"Retry-After": "3600"}), httpx.Response(200, json={}))
    request(client, "GET", URL)
    assert sleeps == [tasks.common.http.MAX_RETRY_WAIT]


def test_retry_after_http_date(sleeps):
    later = datetime.now(timezone.utc) + timedelta(seconds=10)
    header = format_datetime(later, usegmt=True)
    client, _ = client_for(httpx.Response(503, headers={"Retry-After": header}), httpx.Response(200, json={}))
    request(client, "GET", URL)
    assert 8 <= sleeps[0] <= 10


def test_retry_after_parsing():
    now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    assert retry_after_seconds("5", now=now) == 5.0
    assert retry_after_seconds("Wed, 01 Jan 2025 00:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Tue, 31 Dec 2024 00:00:00 GMT", now=now) == 0.0  # in the past
    assert retry_after_seconds("soon", now=now) is None
    assert retry_after_seconds(None) is None and retry_after_seconds("-3") is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 302])
def test_client_errors_not_retried(status, sleeps):
    client, seen = client_for(httpx.Response(status, text="nope"))
    with pytest.raises(RemoteError) as err:
        request(client, "GET", URL)
    assert err.value.code == f"http_{status}" and len(seen) == 1 and sleeps == []
    assert "nope" in str(err.value)  # the API's explanation is kept


def test_timeout_and_network_errors(sleeps):
    client, seen = client_for(httpx.ConnectTimeout("connect timed out"))
    with pytest.raises(RemoteError) as err:
        request(client, "GET", URL)
    assert err.value.code == "timeout" and len(seen) == 2

    client, seen = client_for(httpx.ConnectError("[Errno 111] Connection refused"), httpx.Response(200, json={}))
    assert request_json(client, "GET", URL) == {}  # recovered on the retry

    client, seen = client_for(httpx.ReadError("reset by peer"))
    with pytest.raises(RemoteError) as err:
        request(client, "GET", URL)
    assert err.value.code == "network" and len(seen) == 2
    assert err.value.__cause__ is None  # httpx's exception (and its URL) is not chained


def test_bad_json_and_wrong_type(sleeps):
    client, _ = client_for(httpx.Response(200, text="<html>not json</html>"))
    with pytest.raises(RemoteError) as err:
        request_json(client, "GET", URL)
    assert err.value.code == "bad_response" and "not JSON" in str(err.value)

    client, _ = client_for(httpx.Response(200, json=[1, 2]))
    with pytest.raises(RemoteError) as err:
        request_json(client, "GET", URL)
    assert err.value.code == "bad_response"
    assert request_json(client, "GET", URL, expect=list) == [1, 2]


def test_secrets_never_in_messages_or_logs(sleeps, caplog):
    caplog.set_level(logging.DEBUG)
    echo = httpx.Response(500, text=f"upstream said: bad key {KEY}")
    client, seen = client_for(echo)
    with pytest.raises(RemoteError) as err:
        request(
            client, "GET", URL, params={"api_key": KEY, "q": "x"}, headers={"X-Api-Key": KEY}, secrets=[KEY],
        )
    assert seen[0].url.params["api_key"] == KEY  # the key was really sent
    assert KEY not in str(err.value) and "***" in str(err.value)
    assert "api_key" not in str(err.value)  # no query string in messages at all
    assert KEY not in caplog.text  # httpx's own "HTTP Request: GET ...?api_key=" lines are scrubbed
    assert "retrying" in caplog.text


def test_redact_and_safe_url():
    assert redact(f"x {KEY} y", [KEY, None]) == "x *** y"
    assert redact("GET https://h/p?q=1&api_token=abc&key=def") == "GET https://h/p?q=1&api_token=***&key=***"
    assert safe_url("https://h.example:8443/v1/works?api_key=abc") == "https://h.example:8443/v1/works"


# -- one deadline per call -----------------------------------------------------------

@pytest.fixture
def trickle():
    server = TrickleServer(interval=0.5, lines=120)  # a minute of header lines
    yield server
    server.close()


def test_a_server_trickling_headers_cannot_outlast_the_calls_deadline(trickle):
    # Every single read succeeds within the 5 s timeout; only the whole-call
    # deadline can stop this exchange.
    with make_client(Settings(_env_file=None, http_timeout=5.0)) as client:
        took, outcome = elapsed(lambda: request(client, "GET", trickle.url, within=1.5, retries=1))
    assert isinstance(outcome, RemoteError) and outcome.code == "timeout", outcome
    assert took < 10  # the server would have kept going for a minute
    assert trickle.connections == 1  # no retry once the deadline is spent


def test_no_deadline_means_the_client_timeouts_alone(trickle):
    with make_client(Settings(_env_file=None, http_timeout=0.2)) as client:
        outcome = elapsed(lambda: request(client, "GET", trickle.url, retries=0))[1]
    assert isinstance(outcome, RemoteError) and outcome.code == "timeout"
    assert "no answer within 0.2 s" in str(outcome)


# -- secrets in configured URLs --------------------------------------------------------

USER_PASSWORD = "searx-user:pa55-w0rd-secret"
TOKEN = "tok-7f3c9a1e5b"


def test_a_urls_own_query_survives_request_params(sleeps):
    client, seen = client_for(httpx.Response(200, json={}))
    request_json(client, "GET", f"https://{USER_PASSWORD}@searx.example/search?token={TOKEN}",
                 params={"q": "x", "format": "json"})
    sent = seen[0]
    assert sent.url.params["token"] == TOKEN and sent.url.params["q"] == "x"
    assert sent.headers["Authorization"].startswith("Basic ")  # the URL's credentials become Basic auth


def test_url_credentials_are_configured_secrets(monkeypatch):
    monkeypatch.setenv("SEARXNG_URL", f"https://{USER_PASSWORD}@searx.example/?token={TOKEN}&format=json")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-secret-key-1")
    found = Settings(_env_file=None).secret_values()
    assert {"pa55-w0rd-secret", USER_PASSWORD, TOKEN, "tvly-secret-key-1"} <= set(found)
    assert "json" not in found and "searx-user" not in found


def test_every_parameter_of_a_configured_url_not_known_harmless_is_a_secret(monkeypatch):
    monkeypatch.setenv("SEARXNG_URL", "https://searx.example/?private-token=priv-tok-1&x-api-key=xkey-22"
                                      "&tenant=tenant-333&format=json&language=en&safesearch=1")
    found = set(Settings(_env_file=None).secret_values())
    assert {"priv-tok-1", "xkey-22", "tenant-333"} <= found
    assert not {"json", "en", "1"} & found


@pytest.mark.parametrize("name", ["token", "private-token", "X-Api-Key", "api_key", "apikey", "key", "client_secret",
                                  "password", "passwd", "sig", "signature", "X-Amz-Signature", "X-Amz-Credential",
                                  "auth", "authorization", "auth_code", "oauth_token", "page_token", "session_id"])
def test_credential_parameters_are_redacted_by_the_shape_of_their_name(name):
    text = f"GET https://api.example/v1?q=solar&{name}=s3cr3t-value&page=2 failed"
    assert redact(text) == f"GET https://api.example/v1?q=solar&{name}=***&page=2 failed"


@pytest.mark.parametrize("name", ["q", "author", "authors", "keyword", "monkey", "format", "page", "lang"])
def test_ordinary_parameters_stay_readable(name):
    text = f"https://site.example/list?{name}=visible-value"
    assert redact(text) == text


def test_url_credentials_never_reach_messages_logs_or_bodies(monkeypatch, sleeps, caplog):
    monkeypatch.setenv("SEARXNG_URL", f"https://{USER_PASSWORD}@searx.example/?token={TOKEN}")
    Settings(_env_file=None)  # configuring them is enough for redaction to know them
    caplog.set_level(logging.DEBUG)
    url = f"https://{USER_PASSWORD}@searx.example/search?token={TOKEN}"

    echo = httpx.Response(502, text=f"bad gateway for {url}")
    client, _ = client_for(echo)
    with pytest.raises(RemoteError) as err:
        request(client, "GET", url, params={"q": "x"})
    message = str(err.value)
    assert message.startswith("GET https://searx.example/search: HTTP 502")

    client, _ = client_for(httpx.Response(200, json={"results": [{"url": url, "title": TOKEN}]}))
    body = request_json(client, "GET", url, params={"q": "x"})

    for text in (message, caplog.text, repr(body)):
        for secret in ("pa55-w0rd-secret", TOKEN):
            assert secret not in text
