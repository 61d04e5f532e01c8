"""Shared by the research flow and research CLI tests: a small document
library with predictable search results, and the search APIs (Tavily, Brave,
SearXNG) doubled at the network edge — an httpx.MockTransport handler that
answers in their documented response shapes (tests/fixtures/providers/) and
records every call, so tests can count requests, make them slow, or fail."""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tasks.common.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "providers"

def settings_with(**values) -> Settings:
    """Settings and every provider's own settings from `values` (field
    names: tavily_api_key, searxng_url, ...), no .env read."""
    from tasks.retrieval.providers.registry import provider_settings_classes
    sections = [cls(_env_file=None, **values) for cls in provider_settings_classes()]
    return Settings(_env_file=None, **values).with_sections(*sections)


QUESTION = "How efficient are solar panels and battery storage?"

# Five documents that all share terms with QUESTION, so every keyword query
# finds some of them and the lexical coarse filter keeps them.
LIBRARY_DOCS = {
    "solar-efficiency.md": "# Solar panel efficiency\n\nSolar panel efficiency measures how much sunlight a "
                           "photovoltaic panel turns into electricity. Modern silicon panels reach 22 percent "
                           "efficiency; perovskite tandem cells in the lab exceed 30 percent.\n",
    "battery-storage.md": "# Battery storage at home\n\nBattery storage keeps solar electricity for the night. "
                          "Lithium iron phosphate batteries dominate home storage; round-trip efficiency is "
                          "about 90 percent.\n",
    "grid.md": "# Solar, storage and the grid\n\nThe grid connects solar farms and battery storage to homes. "
               "Operators balance supply and demand and value storage that shifts solar output.\n",
    "panels-weather.md": "# Panels in hot weather\n\nSolar panels lose efficiency as they heat up: about 0.4 "
                         "percent per degree above 25 degrees Celsius.\n",
    "cost.md": "# The cost of solar and storage\n\nThe price of solar panels fell sharply over a decade; battery "
               "storage prices follow. Efficiency gains cut the cost per watt.\n",
}

PROVIDER_KEYS = ("TAVILY_API_KEY", "BRAVE_API_KEY", "SEARXNG_URL", "OPENALEX_API_KEY",
                 "SEMANTIC_SCHOLAR_API_KEY", "THENEWSAPI_TOKEN", "OPENROUTER_API_KEY")
BUDGET_ENV = ("PIPELINE_TIMEOUT", "PIPELINE_MAX_TARGET_COUNT", "PIPELINE_MAX_FALLBACK_ROUNDS",
              "PIPELINE_TARGET_COUNT")
SEARXNG_URL = "http://searx.test:8888"
FAKE_KEYS = {"TAVILY_API_KEY": "tvly-test-key", "BRAVE_API_KEY": "brave-test-key", "SEARXNG_URL": SEARXNG_URL}
PUBLIC_ADDRESS = "93.184.216.34"  # what every result host "resolves" to


def write_library(folder: Path, docs: dict[str, str] = LIBRARY_DOCS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "q"


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


class EdgeCut(RuntimeError):
    """The fake network stopped answering (a run that dies midway)."""


@dataclass
class ApiCall:
    provider: str
    query: str
    started: float
    ended: float = 0.0
    status: int = 0


@dataclass
class FakeWeb:
    """The search APIs and the web pages behind their results.

    delay        seconds each API request takes (pages answer at once)
    failing      providers that answer HTTP 500 to every request
    results      results per API answer; result i of a query is the page
                 https://site{i}.example.org/<query slug> for every provider,
                 so the same page found by two providers is one source
    cut_after    after this many API requests every further one raises EdgeCut
    hold_after   after this many API requests every further one waits for
                 `release` (set it when the test is done)
    """

    delay: float = 0.0
    failing: frozenset[str] = frozenset()
    results: int = 3
    cut_after: int | None = None
    hold_after: int | None = None
    release: threading.Event = field(default_factory=threading.Event)
    calls: list[ApiCall] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    max_in_flight: dict[str, int] = field(default_factory=dict)
    max_total_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.failing = frozenset(self.failing)

    # -- what tests read
    def queries(self, provider: str | None = None) -> list[str]:
        return [c.query for c in self.calls if provider in (None, c.provider)]

    def providers_called(self) -> set[str]:
        return {c.provider for c in self.calls}

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    # -- the network edge
    def __call__(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if host == "api.tavily.com":
            return self._api("tavily", json.loads(request.content)["query"], request)
        if host == "api.search.brave.com":
            return self._api("brave", request.url.params["q"], request)
        if f"{request.url.scheme}://{host}:{request.url.port}" == SEARXNG_URL:
            return self._api("searxng", request.url.params["q"], request)
        return self._page(request)

    def _api(self, provider: str, query: str, request: httpx.Request) -> httpx.Response:
        call = ApiCall(provider, query, time.monotonic())
        with self._lock:
            self.calls.append(call)
            number = len(self.calls)
            self.in_flight[provider] = self.in_flight.get(provider, 0) + 1
            self.max_in_flight[provider] = max(self.max_in_flight.get(provider, 0), self.in_flight[provider])
            self.max_total_in_flight = max(self.max_total_in_flight, sum(self.in_flight.values()))
        try:
            if self.cut_after is not None and number > self.cut_after:
                raise EdgeCut(f"the network went away after {self.cut_after} requests")
            if self.hold_after is not None and number > self.hold_after:
                self.release.wait(30)
            if self.delay:
                time.sleep(self.delay)
            if provider in self.failing:
                call.status = 500
                return httpx.Response(500, json={"error": "internal error"})
            call.status = 200
            return httpx.Response(200, json=self.answer(provider, query))
        finally:
            call.ended = time.monotonic()
            with self._lock:
                self.in_flight[provider] -= 1

    def _page(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.pages.append(str(request.url))
        topic = request.url.path.strip("/").replace("-", " ")
        html = (f"<html><head><title>{topic}</title></head><body><article><h1>{topic}</h1>"
                + "".join(f"<p>{topic}: solar panels and battery storage, paragraph {i}, on efficiency "
                          "and cost of photovoltaic panels and home batteries.</p>" for i in range(8))
                + "</article></body></html>")
        return httpx.Response(200, html=html)

    # -- documented response shapes, filled with this query's results
    def hits(self, query: str) -> list[tuple[str, str, str]]:
        return [(f"https://site{i}.example.org/{slug(query)}", f"{query} — result {i}",
                 f"About {query}: solar panels, battery storage and their efficiency (result {i}).")
                for i in range(1, self.results + 1)]

    def answer(self, provider: str, query: str) -> dict:
        hits = self.hits(query)
        if provider == "tavily":
            doc = _fixture("tavily.json")
            template = doc["results"][0]
            doc["results"] = [{**template, "url": url, "title": title, "content": snippet,
                               "raw_content": f"{title}. {snippet} " * 20, "score": round(0.9 - 0.1 * i, 2),
                               "published_date": "Wed, 12 Jun 2024 20:47:51 GMT"}
                              for i, (url, title, snippet) in enumerate(hits)]
        elif provider == "brave":
            doc = _fixture("brave.json")
            template = doc["web"]["results"][0]
            doc["web"]["results"] = [{**copy.deepcopy(template), "url": url, "title": title,
                                      "description": f"<strong>{snippet}</strong>"} for url, title, snippet in hits]
        else:
            doc = _fixture("searxng.json")
            template = doc["results"][0]
            doc["results"] = [{**template, "url": url, "title": title, "content": snippet, "score": 4.0 - i}
                              for i, (url, title, snippet) in enumerate(hits)]
        doc["query"] = query if provider != "brave" else {"original": query}
        return doc
