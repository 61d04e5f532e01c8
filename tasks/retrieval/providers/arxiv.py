"""arXiv: GET https://export.arxiv.org/api/query, an Atom 1.0 feed, no auth.

Parsed with the stdlib ElementTree (the feed is small and flat; Python's
expat refuses entity-expansion bombs). Titles and abstracts carry hard line
breaks, so whitespace is collapsed. The API has no score.

arXiv asks clients for at most one request every 3 seconds; one search is one
request here, and pacing across queries is the caller's concurrency setting.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from tasks.retrieval.providers.base import Hit, Query
from tasks.retrieval.providers.api import (
    ApiProvider,
    first_url,
    keep,
    make_hit,
    parse_datetime,
    per_call,
    text_or_none,
)

MAX_PER_CALL = 2000  # documented per-request max_results cap
NS = {
    "atom": "http://www.w3.org/2005/Atom",
    "arxiv": "http://arxiv.org/schemas/atom",
}
# A query that already uses arXiv's field syntax is passed through untouched.
_FIELD_SYNTAX = re.compile(r"\b(?:ti|au|abs|co|jr|cat|rn|id|all):")
_TERM = re.compile(r"[\w.\-]+")
_ERROR_ID = "arxiv.org/api/errors"


class ArxivProvider(ApiProvider):
    name = "arxiv"
    intents = frozenset({"academic"})
    endpoint = "https://export.arxiv.org/api/query"
    key_required = False
    # arXiv's terms: one request every 3 s, over a single connection
    min_interval_seconds = 3.0
    max_concurrency = 1

    def search(self, query: Query, max_results: int) -> list[Hit]:
        params = {
            "search_query": search_query(query.text),
            "start": 0,
            "max_results": per_call(max_results, MAX_PER_CALL),
            "sortBy": "relevance",
        }
        response = self.get(self.endpoint, params=params)
        try:
            feed = ET.fromstring(response.content)
        except ET.ParseError as exc:
            raise self.bad_response(f"feed is not XML ({exc})") from None
        if feed.tag != f"{{{NS['atom']}}}feed":
            raise self.bad_response(f"expected an Atom feed, got <{feed.tag}>")
        entries = feed.findall("atom:entry", NS)
        _raise_on_error_entry(self, entries)
        return keep((_hit(e) for e in entries), max_results)


def search_query(text: str) -> str:
    """Free text as `all:a AND all:b`: every word must match somewhere, which
    is how the other providers treat a keyword query."""
    if _FIELD_SYNTAX.search(text):
        return text
    terms = _TERM.findall(text)
    return " AND ".join(f"all:{term}" for term in terms) or f"all:{text}"


def _raise_on_error_entry(provider: ArxivProvider, entries: list[ET.Element]) -> None:
    # arXiv reports a bad query as HTTP 200 (or 400) with a single entry whose
    # id points at its errors page and whose summary says what went wrong.
    if len(entries) == 1 and _ERROR_ID in (_text(entries[0], "atom:id") or ""):
        raise provider.bad_response(f"arXiv error: {_text(entries[0], 'atom:summary')}")


def _text(element: ET.Element, path: str) -> str | None:
    found = element.find(path, NS)
    return text_or_none(found.text) if found is not None else None


def _link(entry: ET.Element, *, rel: str | None = None, title: str | None = None) -> str | None:
    for link in entry.findall("atom:link", NS):
        if (rel is None or link.get("rel") == rel) and (title is None or link.get("title") == title):
            return link.get("href")
    return None


def _hit(entry: ET.Element) -> Hit | None:
    authors = [n for n in (_text(a, "atom:name") for a in entry.findall("atom:author", NS)) if n]
    primary = entry.find("arxiv:primary_category", NS)
    return make_hit(
        url=first_url(_text(entry, "atom:id"), _link(entry, rel="alternate")),
        title=_text(entry, "atom:title"),
        snippet=_text(entry, "atom:summary"),
        published_at=parse_datetime(_text(entry, "atom:published")),
        extra={
            "updated_at": _text(entry, "atom:updated"),
            "pdf_url": _link(entry, title="pdf"),
            "doi": _text(entry, "arxiv:doi"),
            "journal_ref": _text(entry, "arxiv:journal_ref"),
            "primary_category": primary.get("term") if primary is not None else None,
            "categories": [c.get("term") for c in entry.findall("atom:category", NS) if c.get("term")],
            "authors": authors[:10],
        },
    )
