"""SearXNG (self-hosted metasearch): GET {SEARXNG_URL}/search?format=json.

Two quirks of SearXNG's JSON API shape this module:
- JSON output must be enabled in the instance's settings.yml
  (`search.formats`); otherwise it answers 403, reported as `json_disabled`.
- When every engine fails the answer is still HTTP 200 with no results and
  only `unresponsive_engines` filled; that is an error, not an empty page.
There is no result-count parameter: one page is fetched and cut.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field

from tasks.common.http import endpoint_url, safe_url
from tasks.common.settings import Settings
from tasks.retrieval.providers.base import Hit, ProviderSettings, Query
from schemas.errors import RemoteError
from tasks.retrieval.providers.api import (
    ApiProvider,
    as_list,
    dict_items,
    keep,
    make_hit,
    parse_datetime,
    scale_by_max,
    strip_markup,
    text_or_none,
)

# SearXNG's standard categories for the intents it can serve.
CATEGORY_BY_INTENT = {"news": "news", "academic": "science"}


class SearxngSettings(ProviderSettings):
    searxng_url: str | None = Field(
        default=None, validation_alias=AliasChoices("SEARXNG_URL", "SEARCHLAKE_SEARXNG_URL"),
        description="Your SearXNG instance (JSON format enabled); enables the searxng provider (web, news)")
    variable = "SEARXNG_URL"
    url_fields = ("searxng_url",)  # it may carry credentials (user:password@, ?token=)

    @property
    def credential(self) -> str | None:
        return self.searxng_url


class SearxngProvider(ApiProvider):
    name = "searxng"
    intents = frozenset({"web", "news"})
    reads_intent = True  # the request differs by intent (news vs general)
    # Replaced per instance by the configured URL; until then a reserved
    # (.invalid, RFC 2606) name, still a valid URL for a failed item.
    endpoint = "https://searxng.invalid/search"
    settings_class = SearxngSettings

    def __init__(self, settings: Settings, client):
        super().__init__(settings, client)
        self.search_url = None
        if self.key:
            # The configured URL may carry credentials (user:password@,
            # ?token=): they go with the request, while `endpoint`, which
            # failed items and messages show, is the instance without them.
            self.search_url = endpoint_url(self.key, "search")
            self.endpoint = safe_url(self.search_url)

    def search(self, query: Query, max_results: int) -> list[Hit]:
        self.require_key()
        params = {"q": query.text, "format": "json", "pageno": 1}
        if query.intent in CATEGORY_BY_INTENT:
            params["categories"] = CATEGORY_BY_INTENT[query.intent]
        try:
            payload = self.get_json(self.search_url, params=params)
        except RemoteError as exc:
            if exc.http_status == 403:
                raise RemoteError(
                    "json_disabled",
                    f"searxng: {self.endpoint} answered 403: enable 'json' under search.formats "
                    "in the instance's settings.yml (or the instance refuses this client)",
                    http_status=403,
                ) from None
            raise
        results = dict_items(self, payload, "results")
        unresponsive = _unresponsive(payload)
        if not results and unresponsive:
            raise self.bad_response("no results, all engines unresponsive: " + "; ".join(unresponsive))
        scores = scale_by_max([r.get("score") for r in results])
        hits = (_hit(r, score) for r, score in zip(results, scores))
        return keep(hits, max_results)


def _unresponsive(payload: dict) -> list[str]:
    """`[engine, reason]` pairs as "engine (reason)" strings."""
    named = []
    for entry in as_list(payload.get("unresponsive_engines")):
        if isinstance(entry, list) and entry:
            reason = f" ({entry[1]})" if len(entry) > 1 and entry[1] else ""
            named.append(f"{entry[0]}{reason}")
        elif isinstance(entry, str):
            named.append(entry)
    return named


def _hit(result: dict, score: float | None) -> Hit | None:
    return make_hit(
        url=result.get("url"),
        title=strip_markup(result.get("title")),
        snippet=strip_markup(result.get("content")),
        published_at=parse_datetime(result.get("publishedDate")),
        provider_score=score,
        extra={
            "engines": [e for e in as_list(result.get("engines")) if isinstance(e, str)],
            "category": text_or_none(result.get("category")),
            "doi": text_or_none(result.get("doi")),
        },
    )
