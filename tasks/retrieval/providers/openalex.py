"""OpenAlex works search: GET https://api.openalex.org/works?search=...

Since 13 Feb 2026 OpenAlex wants `api_key` as a query parameter (free key);
without one the call is still sent, on the tiny keyless allowance.
Abstracts come as an inverted index (word -> positions) and are rebuilt as
the snippet. `relevance_score` (search only) is open-ended, so it is scaled
by the best score of the page.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr

from tasks.common.settings import secret_value
from tasks.retrieval.providers.base import Hit, ProviderSettings, Query
from tasks.retrieval.providers.api import (
    ApiProvider,
    author_names,
    dict_items,
    dig,
    first_url,
    keep,
    make_hit,
    number,
    parse_datetime,
    per_call,
    scale_by_max,
    text_or_none,
)

MAX_PER_CALL = 100  # per_page max in the newest docs (older ones said 200)


class OpenAlexSettings(ProviderSettings):
    openalex_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENALEX_API_KEY", "SEARCHLAKE_OPENALEX_API_KEY"),
        description="Key for the openalex provider (academic; optional)")
    variable = "OPENALEX_API_KEY"

    @property
    def credential(self) -> str | None:
        return secret_value(self.openalex_api_key)


class OpenAlexProvider(ApiProvider):
    name = "openalex"
    intents = frozenset({"academic"})
    endpoint = "https://api.openalex.org/works"
    settings_class = OpenAlexSettings
    key_required = False

    def search(self, query: Query, max_results: int) -> list[Hit]:
        params = {"search": query.text, "per_page": per_call(max_results, MAX_PER_CALL)}
        if self.key:
            params["api_key"] = self.key
        payload = self.get_json(self.endpoint, params=params)
        works = dict_items(self, payload, "results")
        scores = scale_by_max([w.get("relevance_score") for w in works])
        return keep((_hit(w, s) for w, s in zip(works, scores)), max_results)


def rebuild_abstract(inverted_index: object) -> str | None:
    """{"word": [positions]} back to running text, words in position order."""
    if not isinstance(inverted_index, dict):
        return None
    placed = [
        (pos, word)
        for word, positions in inverted_index.items()
        if isinstance(positions, list)
        for pos in positions
        if isinstance(pos, int) and not isinstance(pos, bool)
    ]
    return text_or_none(" ".join(word for _, word in sorted(placed)))


def _hit(work: dict, score: float | None) -> Hit | None:
    landing = dig(work, "primary_location", "landing_page_url")
    return make_hit(
        # DOI first: the same paper from Semantic Scholar then has the same URL.
        url=first_url(work.get("doi"), landing, work.get("id")),
        title=work.get("display_name") or work.get("title"),
        snippet=rebuild_abstract(work.get("abstract_inverted_index")),
        published_at=parse_datetime(work.get("publication_date")) or parse_datetime(work.get("publication_year")),
        language=text_or_none(work.get("language")),
        provider_score=score,
        extra={
            "openalex_id": text_or_none(work.get("id")),
            "doi": text_or_none(work.get("doi")),
            "landing_page_url": text_or_none(landing),
            "pdf_url": text_or_none(dig(work, "primary_location", "pdf_url")),
            "venue": text_or_none(dig(work, "primary_location", "source", "display_name")),
            "cited_by_count": number(work.get("cited_by_count")),
            "is_oa": dig(work, "open_access", "is_oa"),
            "type": text_or_none(work.get("type")),
            "authors": author_names(work.get("authorships")),
        },
    )
