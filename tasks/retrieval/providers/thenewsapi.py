"""TheNewsAPI: GET https://api.thenewsapi.com/v1/news/all, token as the
`api_token` query parameter (so it must be scrubbed from URLs in messages).

`relevance_score` is on an undocumented scale and null without a search, so
it is kept in `extra` rather than passed off as a [0, 1] score.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr

import re

from tasks.common.settings import secret_value
from tasks.retrieval.providers.base import Hit, ProviderSettings, Query
from tasks.retrieval.providers.api import (
    ApiProvider,
    as_list,
    dict_items,
    keep,
    make_hit,
    number,
    parse_datetime,
    per_call,
    text_or_none,
)


MAX_PER_CALL = 100  # no documented maximum; plans cap far lower


class TheNewsApiSettings(ProviderSettings):
    thenewsapi_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("THENEWSAPI_TOKEN", "SEARCHLAKE_THENEWSAPI_TOKEN"),
        description="Enables the thenewsapi provider (news)")
    variable = "THENEWSAPI_TOKEN"

    @property
    def credential(self) -> str | None:
        return secret_value(self.thenewsapi_token)


class TheNewsApiProvider(ApiProvider):
    name = "thenewsapi"
    intents = frozenset({"news"})
    endpoint = "https://api.thenewsapi.com/v1/news/all"
    settings_class = TheNewsApiSettings

    def search(self, query: Query, max_results: int) -> list[Hit]:
        token = self.require_key()
        # `limit` is capped by the plan (3 per request on the free plan, per
        # third-party clients); whether a larger value is clamped is unverified.
        params = {"api_token": token, "search": search_text(query.text), "limit": per_call(max_results, MAX_PER_CALL)}
        payload = self.get_json(self.endpoint, params=params)
        return keep((_hit(a) for a in dict_items(self, payload, "data")), max_results)


_INNER_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")


def search_text(text: str) -> str:
    """`-` is the NOT operator in TheNewsAPI's search syntax; a hyphen inside a
    word ("covid-19") is escaped so it stays a literal character."""
    return _INNER_HYPHEN.sub(r"\\-", text)


def _hit(article: dict) -> Hit | None:
    return make_hit(
        url=article.get("url"),
        title=article.get("title"),
        snippet=text_or_none(article.get("description")) or text_or_none(article.get("snippet")),
        published_at=parse_datetime(article.get("published_at")),
        language=text_or_none(article.get("language")),
        extra={
            "uuid": text_or_none(article.get("uuid")),
            "source": text_or_none(article.get("source")),
            "categories": [c for c in as_list(article.get("categories")) if isinstance(c, str)],
            "locale": text_or_none(article.get("locale")),
            "relevance_score": number(article.get("relevance_score")),
        },
    )
