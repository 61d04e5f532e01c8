"""Every API provider against its documented response shape (tests/fixtures/providers/),
replayed through httpx.MockTransport behind the real shared client.

The first half checks each provider's request and parsing; the second half
runs the same failure scenarios against all of them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest

import tasks.common.http
from tasks.common.settings import Settings
from tasks.common.http import make_client
from tasks.retrieval.providers.arxiv import ArxivProvider, search_query
from tasks.retrieval.providers.base import Query
from schemas.errors import RemoteError
from tests.research_helpers import settings_with
from tasks.retrieval.providers.brave import BraveProvider
from tasks.retrieval.providers.openalex import OpenAlexProvider, rebuild_abstract
from tasks.retrieval.providers.searxng import SearxngProvider
from tasks.retrieval.providers.semanticscholar import SemanticScholarProvider
from tasks.retrieval.providers.tavily import TavilyProvider
from tasks.retrieval.providers.thenewsapi import TheNewsApiProvider, search_text

FIXTURES = Path(__file__).parent.parent / "fixtures" / "providers"
SECRETS = {
    "tavily_api_key": "tvly-SECRET-0001",
    "brave_api_key": "BRAVE-SECRET-0002",
    "openalex_api_key": "OPENALEX-SECRET-0003",
    "semantic_scholar_api_key": "S2-SECRET-0004",
    "thenewsapi_token": "TNA-SECRET-0005",
}
SEARXNG_URL = "http://searx.test:8888/"
NO_KEYS = {**{k: None for k in SECRETS}, "searxng_url": None}
QUERY = Query("q1", "duckdb lakehouse", "web")


def make_settings(**overrides) -> Settings:
    # Explicit values beat whatever keys the developer's environment holds.
    return settings_with(**{**NO_KEYS, **SECRETS, "searxng_url": SEARXNG_URL, **overrides})


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def ok(name: str) -> httpx.Response:
    if name.endswith(".xml"):
        return httpx.Response(200, text=fixture_text(name), headers={"Content-Type": "application/atom+xml"})
    return httpx.Response(200, json=json.loads(fixture_text(name)))


class Server:
    """The network edge: records each request and plays queued answers
    (a Response, or an exception to raise)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def sleeps(monkeypatch):
    """Retry waits are recorded instead of slept."""
    waits: list[float] = []
    monkeypatch.setattr(tasks.common.http, "_sleep", waits.append)
    return waits


def run(cls, server: Server, *, query: Query = QUERY, max_results: int = 10, **settings_overrides):
    settings = make_settings(**settings_overrides)
    with make_client(settings, transport=httpx.MockTransport(server)) as client:
        return cls(settings, client).search(query, max_results)


# -- Tavily -------------------------------------------------------------------
def test_tavily_request_and_hits(sleeps):
    server = Server(ok("tavily.json"))
    hits = run(TavilyProvider, server, max_results=5)

    (req,) = server.requests
    assert req.method == "POST" and str(req.url) == "https://api.tavily.com/search"
    assert req.headers["Authorization"] == "Bearer tvly-SECRET-0001"
    body = json.loads(req.content)
    assert body["query"] == "duckdb lakehouse" and body["max_results"] == 5 and body["topic"] == "general"

    assert [h.url for h in hits] == [
        "https://example.org/duckdb-lakehouse",
        "https://example.com/parquet",
        "https://example.net/odd",
    ]
    first = hits[0]
    assert first.title == "DuckDB as a lakehouse engine"
    assert first.snippet == "DuckDB reads Parquet files directly from object storage."
    assert first.published_at == datetime(2024, 6, 12, 20, 47, 51, tzinfo=timezone.utc)
    assert first.provider_score == pytest.approx(0.87)
    assert first.extra == {"favicon": "https://example.org/favicon.ico"}
    assert hits[1].published_at is None
    assert hits[2].provider_score == 1.0  # clamped into [0, 1]


def test_tavily_news_intent_and_result_cap(sleeps):
    server = Server(ok("tavily.json"))
    hits = run(TavilyProvider, server, query=Query("q2", "lakes", "news"), max_results=50)
    body = json.loads(server.requests[0].content)
    assert body["topic"] == "news" and body["max_results"] == 20  # documented max
    assert len(hits) == 3

    assert len(run(TavilyProvider, Server(ok("tavily.json")), max_results=1)) == 1


# -- Brave ----------------------------------------------------------------------
def test_brave_request_and_hits(sleeps):
    server = Server(ok("brave.json"))
    hits = run(BraveProvider, server, max_results=7)

    (req,) = server.requests
    assert req.method == "GET"
    assert req.url.copy_with(query=None) == "https://api.search.brave.com/res/v1/web/search"
    assert req.url.params["q"] == "duckdb lakehouse" and req.url.params["count"] == "7"
    assert req.headers["X-Subscription-Token"] == "BRAVE-SECRET-0002"
    assert req.headers["Accept"] == "application/json"

    assert [h.url for h in hits] == ["https://example.org/duckdb", "https://example.com/second"]
    first = hits[0]
    assert first.title == "DuckDB & the Lakehouse"
    assert first.snippet == "Query Parquet files 'in place' with DuckDB."
    assert first.published_at == datetime(2023, 4, 12, 14, 22, 41, tzinfo=timezone.utc)
    assert first.language == "en" and first.provider_score is None
    assert first.extra["age"] == "2 days ago" and first.extra["site"] == "example.org"
    assert first.extra["extra_snippets"] == ["More about DuckDB.", "And Parquet."]


def test_brave_count_is_capped_and_missing_web_is_empty(sleeps):
    server = Server(httpx.Response(200, json={"type": "search", "query": {"original": "x"}}))
    assert run(BraveProvider, server, max_results=50) == []
    assert server.requests[0].url.params["count"] == "20"


# -- SearXNG --------------------------------------------------------------------
def test_searxng_request_and_hits(sleeps):
    server = Server(ok("searxng.json"))
    hits = run(SearxngProvider, server, max_results=10)

    (req,) = server.requests
    assert req.method == "GET"
    assert req.url.copy_with(query=None) == "http://searx.test:8888/search"
    assert req.url.params["format"] == "json" and req.url.params["q"] == "duckdb lakehouse"
    assert "categories" not in req.url.params  # web: the instance's default

    assert [h.url for h in hits] == ["https://example.org/duckdb", "https://example.com/parquet"]
    assert [h.provider_score for h in hits] == [1.0, 0.25]  # scaled by the page's best
    assert hits[0].snippet == "DuckDB reads Parquet."
    assert hits[0].published_at == datetime(2024, 2, 1, 8, 0, tzinfo=timezone.utc)
    assert hits[0].extra["engines"] == ["duckduckgo", "brave"]
    assert hits[1].published_at is None


def test_searxng_endpoint_follows_configured_url_and_intent(sleeps):
    server = Server(ok("searxng.json"))
    hits = run(
        SearxngProvider, server, query=Query("q3", "lakes", "news"), max_results=1,
        searxng_url="https://search.example.net/searx",
    )
    assert len(hits) == 1  # no count parameter: the page is cut
    req = server.requests[0]
    assert req.url.copy_with(query=None) == "https://search.example.net/searx/search"
    assert req.url.params["categories"] == "news"


def test_searxng_403_means_json_disabled(sleeps):
    server = Server(httpx.Response(403, text="Forbidden"))
    with pytest.raises(RemoteError) as err:
        run(SearxngProvider, server)
    assert err.value.code == "json_disabled" and err.value.http_status == 403
    assert "search.formats" in str(err.value)


def test_searxng_all_engines_unresponsive_is_an_error(sleeps):
    with pytest.raises(RemoteError) as err:
        run(SearxngProvider, Server(ok("searxng_unresponsive.json")))
    assert err.value.code == "bad_response"
    assert "google (CAPTCHA)" in str(err.value) and "duckduckgo (timeout)" in str(err.value)


def test_searxng_empty_page_without_failures_is_empty(sleeps):
    empty = {"query": "x", "results": [], "unresponsive_engines": []}
    assert run(SearxngProvider, Server(httpx.Response(200, json=empty))) == []


# -- OpenAlex -------------------------------------------------------------------
def test_openalex_request_and_hits(sleeps):
    server = Server(ok("openalex.json"))
    hits = run(OpenAlexProvider, server, max_results=3)

    (req,) = server.requests
    assert req.url.copy_with(query=None) == "https://api.openalex.org/works"
    assert req.url.params["search"] == "duckdb lakehouse"
    assert req.url.params["per_page"] == "3"
    assert req.url.params["api_key"] == "OPENALEX-SECRET-0003"

    assert [h.url for h in hits] == [
        "https://doi.org/10.7717/peerj.4375",  # doi first
        "https://repo.example.edu/item/2",  # then the landing page
        "https://openalex.org/W3",  # then the OpenAlex id
    ]
    first = hits[0]
    assert first.title == "The state of OA"
    assert first.snippet == "Despite growing interest in Open in Access"
    assert first.published_at == datetime(2018, 2, 13, tzinfo=timezone.utc)
    assert [h.provider_score for h in hits] == [1.0, 0.5, None]
    assert first.extra["authors"] == ["Heather Piwowar", "Jason Priem"]
    assert first.extra["venue"] == "PeerJ" and first.extra["cited_by_count"] == 900
    assert hits[1].snippet is None
    assert hits[2].published_at == datetime(2020, 1, 1, tzinfo=timezone.utc)  # year only


def test_openalex_without_key_sends_none_and_caps_per_page(sleeps):
    server = Server(ok("openalex.json"))
    run(OpenAlexProvider, server, max_results=500, openalex_api_key=None)
    params = server.requests[0].url.params
    assert "api_key" not in params and params["per_page"] == "100"


def test_rebuild_abstract_tolerates_junk():
    assert rebuild_abstract({"b": [1], "a": [0], "bad": "x", "c": [2, True]}) == "a b c"
    assert rebuild_abstract(None) is None and rebuild_abstract({}) is None


# -- Semantic Scholar -----------------------------------------------------------
def test_semanticscholar_request_and_hits(sleeps):
    server = Server(ok("semanticscholar.json"))
    hits = run(SemanticScholarProvider, server, query=Query("q4", "literature graph", "academic"), max_results=4)

    (req,) = server.requests
    assert req.url.copy_with(query=None) == "https://api.semanticscholar.org/graph/v1/paper/search"
    assert req.url.params["query"] == "literature graph" and req.url.params["limit"] == "4"
    assert {"title", "abstract", "publicationDate", "externalIds"} <= set(req.url.params["fields"].split(","))
    assert req.headers["x-api-key"] == "S2-SECRET-0004"

    assert [h.url for h in hits] == [
        "https://doi.org/10.18653/v1/N18-3011",
        "https://www.semanticscholar.org/paper/abc",
    ]
    first, second = hits
    assert first.snippet == "We describe a deployed scalable system."
    assert first.published_at == datetime(2018, 5, 6, tzinfo=timezone.utc)
    assert first.extra["arxiv_id"] == "1805.02262" and first.extra["authors"] == ["Waleed Ammar", "Dirk Groeneveld"]
    assert first.provider_score is None
    assert second.snippet == "The tldr stands in for the abstract."
    assert second.published_at == datetime(2019, 1, 1, tzinfo=timezone.utc)


def test_semanticscholar_keyless_and_no_data(sleeps):
    server = Server(httpx.Response(200, json={"total": 0, "offset": 0}))
    assert run(SemanticScholarProvider, server, semantic_scholar_api_key=None) == []
    assert "x-api-key" not in server.requests[0].headers


# -- arXiv ----------------------------------------------------------------------
def test_arxiv_request_and_hits(sleeps):
    server = Server(ok("arxiv.xml"))
    hits = run(ArxivProvider, server, query=Query("q5", "electron transport", "academic"), max_results=2)

    (req,) = server.requests
    assert req.url.copy_with(query=None) == "https://export.arxiv.org/api/query"
    assert req.url.params["search_query"] == "all:electron AND all:transport"
    assert req.url.params["max_results"] == "2" and req.url.params["start"] == "0"

    first, second = hits
    assert first.url == "http://arxiv.org/abs/2101.00001v2"
    assert first.title == "Electron transport in layered materials"
    assert first.snippet == "We study electron transport."
    assert first.published_at == datetime(2021, 1, 1, 18, 59, 59, tzinfo=timezone.utc)
    assert first.extra["pdf_url"] == "http://arxiv.org/pdf/2101.00001v2"
    assert first.extra["doi"] == "10.1000/xyz123"
    assert first.extra["primary_category"] == "cond-mat.mes-hall"
    assert first.extra["authors"] == ["Ada Lovelace", "Alan Turing"]
    assert second.title == "A second paper" and second.extra["categories"] == ["cs.DB"]


def test_arxiv_search_query_building():
    assert search_query("ti:checkerboard AND au:del_maestro") == "ti:checkerboard AND au:del_maestro"
    assert search_query("graph-based RAG, 2024") == "all:graph-based AND all:RAG AND all:2024"


def test_arxiv_error_feed_is_bad_response(sleeps):
    with pytest.raises(RemoteError) as err:
        run(ArxivProvider, Server(ok("arxiv_error.xml")))
    assert err.value.code == "bad_response" and "max_results must be non-negative" in str(err.value)


# -- TheNewsAPI -----------------------------------------------------------------
def test_thenewsapi_request_and_hits(sleeps):
    server = Server(ok("thenewsapi.json"))
    hits = run(TheNewsApiProvider, server, query=Query("q6", "data lakes", "news"), max_results=3)

    (req,) = server.requests
    assert req.url.copy_with(query=None) == "https://api.thenewsapi.com/v1/news/all"
    assert req.url.params["api_token"] == "TNA-SECRET-0005"
    assert req.url.params["search"] == "data lakes" and req.url.params["limit"] == "3"

    first, second = hits
    assert first.url == "https://news.example.com/lakes"
    assert first.snippet == "Object storage prices fall again."
    assert first.published_at == datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)
    assert first.language == "en" and first.provider_score is None
    assert first.extra["source"] == "news.example.com" and first.extra["relevance_score"] == 31.5
    assert second.snippet == "Only a snippet."


def test_thenewsapi_escapes_inner_hyphens():
    assert search_text("covid-19 vaccine -hoax") == "covid\\-19 vaccine -hoax"


# -- the same failures, every provider --------------------------------------------
PROVIDERS = {
    TavilyProvider: "tavily.json",
    BraveProvider: "brave.json",
    SearxngProvider: "searxng.json",
    OpenAlexProvider: "openalex.json",
    SemanticScholarProvider: "semanticscholar.json",
    ArxivProvider: "arxiv.xml",
    TheNewsApiProvider: "thenewsapi.json",
}
every_provider = pytest.mark.parametrize("cls", list(PROVIDERS), ids=lambda c: c.name)


def assert_no_secret(text: str) -> None:
    for secret in SECRETS.values():
        assert secret not in text


@every_provider
def test_protocol_attributes(cls):
    assert cls.name and cls.endpoint.startswith("https://")  # lands as a failed item's URL
    assert cls.intents and cls.intents <= {"web", "academic", "news"}


@every_provider
def test_401_is_http_401_without_retry(cls, sleeps):
    # An API that echoes the key back must not get it into our message.
    key_field = next(iter(cls.settings_class.model_fields)) if cls.settings_class else None
    echo = httpx.Response(401, json={"error": f"invalid key {SECRETS.get(key_field)}"})
    server = Server(echo)
    with pytest.raises(RemoteError) as err:
        run(cls, server)
    assert err.value.code == "http_401" and err.value.http_status == 401
    assert len(server.requests) == 1 and sleeps == []
    assert_no_secret(str(err.value))


@every_provider
def test_429_with_retry_after_is_retried_once(cls, sleeps):
    server = Server(httpx.Response(429, headers={"Retry-After": "2"}), ok(PROVIDERS[cls]))
    hits = run(cls, server)
    assert hits and len(server.requests) == 2
    assert sleeps == [2.0]


@every_provider
def test_500_twice_is_http_500(cls, sleeps):
    server = Server(httpx.Response(500, text="oops"), httpx.Response(500, text="oops"), ok(PROVIDERS[cls]))
    with pytest.raises(RemoteError) as err:
        run(cls, server)
    assert err.value.code == "http_500" and len(server.requests) == 2


@every_provider
def test_timeout_is_retried_then_reported(cls, sleeps):
    server = Server(httpx.ReadTimeout("timed out"))
    with pytest.raises(RemoteError) as err:
        run(cls, server)
    assert err.value.code == "timeout" and len(server.requests) == 2
    assert_no_secret(str(err.value))


@every_provider
def test_garbage_body_is_bad_response(cls, sleeps):
    server = Server(httpx.Response(200, text="<html>maintenance</html> not what you asked for"))
    with pytest.raises(RemoteError) as err:
        run(cls, server)
    assert err.value.code == "bad_response"


@every_provider
def test_wrong_shape_is_bad_response(cls, sleeps):
    if cls is ArxivProvider:
        body = httpx.Response(200, text="<rss><channel/></rss>")
    else:
        body = httpx.Response(200, json={"results": "nope", "data": 3, "web": {"results": {}}})
    with pytest.raises(RemoteError) as err:
        run(cls, Server(body))
    assert err.value.code == "bad_response"


@every_provider
def test_connection_error_is_network(cls, sleeps, caplog):
    server = Server(httpx.ConnectError("connection refused"))
    with pytest.raises(RemoteError) as err:
        run(cls, server)
    assert err.value.code == "network" and len(server.requests) == 2
    assert_no_secret(str(err.value))
    assert_no_secret(caplog.text)


@pytest.mark.parametrize(
    "cls,setting",
    [
        (TavilyProvider, "tavily_api_key"),
        (BraveProvider, "brave_api_key"),
        (SearxngProvider, "searxng_url"),
        (TheNewsApiProvider, "thenewsapi_token"),
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_missing_key_is_not_configured(cls, setting, sleeps):
    server = Server(ok(PROVIDERS[cls]))
    with pytest.raises(RemoteError) as err:
        run(cls, server, **{setting: None})
    assert err.value.code == "not_configured" and setting.upper() in str(err.value)
    assert server.requests == []
