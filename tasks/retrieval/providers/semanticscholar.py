"""Semantic Scholar Graph API paper search:
GET https://api.semanticscholar.org/graph/v1/paper/search, optional x-api-key.

Only the fields named in `fields` come back (plus paperId). There is no
relevance score. With no match the API may leave out `data` entirely.
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
    text_or_none,
)

MAX_PER_CALL = 100  # documented `limit` max
FIELDS = "title,url,abstract,year,publicationDate,venue,authors,citationCount,externalIds,openAccessPdf,tldr"


class SemanticScholarSettings(ProviderSettings):
    semantic_scholar_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SEMANTIC_SCHOLAR_API_KEY", "SEARCHLAKE_SEMANTIC_SCHOLAR_API_KEY"),
        description="Key for the semanticscholar provider (academic; optional)")
    variable = "SEMANTIC_SCHOLAR_API_KEY"

    @property
    def credential(self) -> str | None:
        return secret_value(self.semantic_scholar_api_key)


class SemanticScholarProvider(ApiProvider):
    name = "semanticscholar"
    intents = frozenset({"academic"})
    endpoint = "https://api.semanticscholar.org/graph/v1/paper/search"
    settings_class = SemanticScholarSettings
    key_required = False  # keyless calls share a small public pool

    def search(self, query: Query, max_results: int) -> list[Hit]:
        params = {"query": query.text, "limit": per_call(max_results, MAX_PER_CALL), "fields": FIELDS}
        headers = {"x-api-key": self.key} if self.key else None
        payload = self.get_json(self.endpoint, params=params, headers=headers)
        papers = dict_items(self, payload, "data", missing_ok=True)
        return keep((_hit(p) for p in papers), max_results)


def _hit(paper: dict) -> Hit | None:
    doi = text_or_none(dig(paper, "externalIds", "DOI"))
    return make_hit(
        # DOI URL first, like OpenAlex, so one paper is one source across both.
        url=first_url(doi and f"https://doi.org/{doi}", paper.get("url")),
        title=paper.get("title"),
        snippet=text_or_none(paper.get("abstract")) or text_or_none(dig(paper, "tldr", "text")),
        published_at=parse_datetime(paper.get("publicationDate")) or parse_datetime(paper.get("year")),
        extra={
            "paper_id": text_or_none(paper.get("paperId")),
            "s2_url": text_or_none(paper.get("url")),
            "doi": doi,
            "arxiv_id": text_or_none(dig(paper, "externalIds", "ArXiv")),
            "pdf_url": text_or_none(dig(paper, "openAccessPdf", "url")),
            "venue": text_or_none(paper.get("venue")),
            "citation_count": number(paper.get("citationCount")),
            "authors": author_names(paper.get("authors")),
        },
    )
