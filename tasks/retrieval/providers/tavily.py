"""Tavily search: POST https://api.tavily.com/search, Bearer auth.

Tavily returns a relevance `score` in [0, 1] and, for topic "news", a
`published_date`. News-intent queries ask for topic "news" to get those dates.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr

from tasks.common.settings import secret_value
from tasks.retrieval.providers.base import Hit, ProviderSettings, Query
from tasks.retrieval.providers.api import (
    ApiProvider,
    dict_items,
    keep,
    make_hit,
    parse_datetime,
    per_call,
    text_or_none,
    unit_score,
)

MAX_PER_CALL = 20  # documented range of max_results: 0-20


class TavilySettings(ProviderSettings):
    tavily_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("TAVILY_API_KEY", "SEARCHLAKE_TAVILY_API_KEY"),
        description="Enables the tavily provider (web, news)")
    variable = "TAVILY_API_KEY"

    @property
    def credential(self) -> str | None:
        return secret_value(self.tavily_api_key)


class TavilyProvider(ApiProvider):
    name = "tavily"
    intents = frozenset({"web", "news"})
    reads_intent = True  # the request differs by intent (news vs general)
    endpoint = "https://api.tavily.com/search"
    settings_class = TavilySettings

    def search(self, query: Query, max_results: int) -> list[Hit]:
        key = self.require_key()
        body = {
            "query": query.text,
            "max_results": per_call(max_results, MAX_PER_CALL),
            "topic": "news" if query.intent == "news" else "general",
            "search_depth": "basic",
        }
        payload = self.post_json(self.endpoint, json=body, headers={"Authorization": f"Bearer {key}"})
        return keep((_hit(r) for r in dict_items(self, payload, "results")), max_results)


def _hit(result: dict) -> Hit | None:
    return make_hit(
        url=result.get("url"),
        title=result.get("title"),
        snippet=text_or_none(result.get("content")),
        # raw_content is only sent when asked for; keep it when present
        content_text=result.get("raw_content") if isinstance(result.get("raw_content"), str) else None,
        published_at=parse_datetime(result.get("published_date")),
        provider_score=unit_score(result.get("score")),
        extra={"favicon": result.get("favicon")},
    )
