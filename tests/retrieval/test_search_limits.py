"""What a provider returns is made to fit the contract's size limits before it
lands: a long title or snippet is cut, a URL past the limit is dropped, and
the bundle still lands."""

from __future__ import annotations

from datetime import datetime, timezone

from schemas.bundle import MAX_SNIPPET_CHARS, MAX_TITLE_CHARS, MAX_URL_CHARS, SearchResultBundle
from tasks.retrieval.providers.base import Hit, Query
from tasks.retrieval.search import SearchCall, hits_bundle


def test_oversized_hits_are_cut_or_dropped_and_the_bundle_stays_valid(settings):
    hits = [Hit(url="https://a.example/long", title="t" * 5_000_000, snippet="s" * 50_000),
            Hit(url="https://b.example/" + "p" * MAX_URL_CHARS, title="too long a URL"),
            Hit(url="https://c.example/\x00nul", title="control character"),
            Hit(url="https://d.example/" + "u" * 6_000, title="")]
    bundle = hits_bundle(SearchCall("tavily", Query("q1", "long", "web")), hits, task_id="t1",
                         executed_at=datetime(2026, 3, 1, tzinfo=timezone.utc), max_results=10, settings=settings)

    by_url = {item.url[:20]: item for item in bundle.results}
    assert set(by_url) == {"https://a.example/lo", "https://d.example/uu"}
    assert len(by_url["https://a.example/lo"].title) == MAX_TITLE_CHARS
    assert len(by_url["https://a.example/lo"].snippet) == MAX_SNIPPET_CHARS
    assert len(by_url["https://d.example/uu"].title) == MAX_TITLE_CHARS  # the URL stood in for the title
    assert bundle.refused_unsafe_urls == 2
    assert SearchResultBundle.model_validate_json(bundle.model_dump_json())
