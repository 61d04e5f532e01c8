"""Brave web search: GET https://api.search.brave.com/res/v1/web/search,
key in the X-Subscription-Token header.

Descriptions carry `<strong>` highlighting (text_decorations defaults on);
`page_age` is an ISO datetime, `age` only human text. No relevance score.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr

from tasks.common.settings import secret_value
from tasks.retrieval.providers.base import Hit, ProviderSettings, Query
from tasks.retrieval.providers.api import (
    ApiProvider,
    as_list,
    dict_items,
    dig,
    keep,
    make_hit,
    parse_datetime,
    per_call,
    strip_markup,
    text_or_none,
)

MAX_PER_CALL = 20  # documented `count` range for web results: 1-20


class BraveSettings(ProviderSettings):
    brave_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("BRAVE_API_KEY", "SEARCHLAKE_BRAVE_API_KEY"),
        description="Enables the brave provider (web, news)")
    variable = "BRAVE_API_KEY"

    @property
    def credential(self) -> str | None:
        return secret_value(self.brave_api_key)


class BraveProvider(ApiProvider):
    name = "brave"
    intents = frozenset({"web", "news"})
    endpoint = "https://api.search.brave.com/res/v1/web/search"
    settings_class = BraveSettings

    def search(self, query: Query, max_results: int) -> list[Hit]:
        key = self.require_key()
        params = {"q": query.text, "count": per_call(max_results, MAX_PER_CALL)}
        headers = {"X-Subscription-Token": key, "Accept": "application/json"}
        payload = self.get_json(self.endpoint, params=params, headers=headers)
        # Brave leaves `web` out when it has no web results for the query.
        web = payload.get("web") or {}
        if not isinstance(web, dict):
            raise self.bad_response("'web' is not an object")
        return keep((_hit(r) for r in dict_items(self, web, "results", missing_ok=True)), max_results)


def _hit(result: dict) -> Hit | None:
    extra_snippets = [s for s in (strip_markup(x) for x in as_list(result.get("extra_snippets"))) if s]
    return make_hit(
        url=result.get("url"),
        title=strip_markup(result.get("title")),
        snippet=strip_markup(result.get("description")),
        published_at=parse_datetime(result.get("page_age")),
        language=text_or_none(result.get("language")),
        extra={
            "age": text_or_none(result.get("age")),
            "site": text_or_none(dig(result, "meta_url", "hostname")),
            "extra_snippets": extra_snippets,
        },
    )
