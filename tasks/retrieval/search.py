"""Searching: route a plan's queries to providers, and turn one provider
call into one scored SearchResultBundle — a failed call included, so that a
provider's failure lands as evidence instead of failing the run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone

import httpx

from schemas.bundle import (MAX_CONTENT_CHARS, MAX_ERROR_MESSAGE_CHARS, MAX_SHORT_CHARS, MAX_SNIPPET_CHARS,
                            MAX_TITLE_CHARS, MAX_URL_CHARS, SearchResultBundle, SearchResultItem, SearchResultStats,
                            clipped)
from schemas.plan import ResearchPlan
from schemas.urls import WEB_SCHEMES, UnsafeURL, check_lake_url, source_id_for, url_scheme
from tasks.common.settings import Settings
from tasks.retrieval.fetch import configured_hosts, fetch_content
from tasks.retrieval.providers.base import Hit, Provider, Query
from schemas.errors import RemoteError
from tasks.retrieval.scoring import score_hit


@dataclass(frozen=True)
class SearchCall:
    """One query for one provider; query_id q<plan index>.<provider>."""

    provider: str
    query: Query


def route(plan: ResearchPlan, providers: dict[str, Provider]) -> list[SearchCall]:
    """Each planned query goes to the providers serving its intent; a query
    whose intent no enabled provider serves goes to every enabled provider,
    so no part of the plan is silently dropped."""
    calls = []
    asked: set[tuple[str, str]] = set()  # the same text twice at one provider pays twice for nothing
    for index, planned in enumerate(plan.queries, start=1):
        serving = [name for name, p in providers.items() if planned.intent in p.intents]
        for name in serving or list(providers):
            intent = planned.intent if providers[name].reads_intent else ""
            key = (name, intent, " ".join(planned.text.lower().split()))
            if key in asked:
                continue
            asked.add(key)
            query = Query(query_id=f"q{index}.{name}", text=planned.text, intent=planned.intent,
                          question=plan.question)
            calls.append(SearchCall(name, query))
    return calls


def search_bundle(provider: Provider, call: SearchCall, *, task_id: str, max_results: int,
                  settings: Settings, client: httpx.Client | None = None) -> SearchResultBundle:
    executed_at = datetime.now(timezone.utc)
    started = time.monotonic()
    try:
        hits = provider.search(call.query, max_results)
    except RemoteError as exc:
        bundle = failed_bundle(call, task_id, executed_at, exc.code, str(exc), provider.endpoint, exc.http_status)
        bundle.stats.duration_ms = _elapsed_ms(started)
        return bundle
    bundle = hits_bundle(call, hits, task_id=task_id, executed_at=executed_at,
                         max_results=max_results, settings=settings)
    bundle.stats.duration_ms = _elapsed_ms(started)  # the call itself; page fetches below are not search latency
    if settings.fetch_content and client is not None:
        add_page_text(bundle, settings, client)
    return bundle


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def add_page_text(bundle: SearchResultBundle, settings: Settings, client: httpx.Client) -> None:
    """Fetch the page text of the top results that came with a snippet only.
    A failed fetch keeps the result and adds a `failed` item for the same
    source, so the failure reaches the error log without losing the result."""
    allowed = configured_hosts(settings)
    failures = []
    for item in bundle.results[:settings.fetch_top]:
        if item.content_text or url_scheme(item.url) not in WEB_SCHEMES:
            continue
        try:
            page = fetch_content(item.url, settings, client, allow_hosts=allowed)
        except RemoteError as exc:
            failures.append(item.model_copy(update={"status": "failed", "error_code": exc.code,
                                                    "error_message": clipped(str(exc), MAX_ERROR_MESSAGE_CHARS),
                                                    "http_status": exc.http_status, "rank": None}))
            continue
        item.content_text, item.http_status = page.text, page.http_status
    bundle.results += failures
    bundle.stats.failed_count += len(failures)


def hits_bundle(call: SearchCall, hits: list[Hit], *, task_id: str, executed_at: datetime,
                max_results: int, settings: Settings) -> SearchResultBundle:
    items: list[SearchResultItem] = []
    seen: set[str] = set()
    unsafe = duplicates = 0
    for hit in hits:
        try:
            check_lake_url(hit.url)
        except UnsafeURL:
            unsafe += 1
            continue
        if len(hit.url) > MAX_URL_CHARS:  # the contract's limit: such a hit cannot land
            unsafe += 1
            continue
        source_id = source_id_for(hit.url)
        if source_id in seen:
            duplicates += 1
            continue
        seen.add(source_id)
        items.append(_item(hit, source_id, call.query, executed_at, settings))
    items = items[:max_results]  # in the provider's order: its ranking for this query
    for rank, item in enumerate(items, start=1):
        item.rank = rank
    stats = SearchResultStats.of(items, total_returned=len(hits), dedup_count=duplicates)
    return SearchResultBundle(task_id=task_id, query_id=call.query.query_id, query_text=call.query.text,
                              query_intent=call.query.intent, provider=call.provider,
                              executed_at=executed_at, results=items, stats=stats,
                              refused_unsafe_urls=unsafe)


def _item(hit: Hit, source_id: str, query: Query, captured_at: datetime, settings: Settings) -> SearchResultItem:
    scores = score_hit(query.question or query.text, hit, query.intent, settings, now=captured_at)
    return SearchResultItem(
        source_id=source_id, url=hit.url, title=clipped(hit.title or hit.url, MAX_TITLE_CHARS),
        snippet=clipped(hit.snippet, MAX_SNIPPET_CHARS), content_text=clipped(hit.content_text, MAX_CONTENT_CHARS),
        language=clipped(hit.language, MAX_SHORT_CHARS), published_at=hit.published_at,
        captured_at=captured_at, http_status=hit.http_status, status="ok", **scores,
    )


def failed_bundle(call: SearchCall, task_id: str, executed_at: datetime, code: str, message: str,
                  endpoint: str, http_status: int | None = None) -> SearchResultBundle:
    item = SearchResultItem(url=endpoint, title=f"{call.provider} search failed: {message}"[:300],
                            captured_at=executed_at, http_status=http_status, score_final=0.0,
                            status="failed", error_code=code,
                            error_message=clipped(message, MAX_ERROR_MESSAGE_CHARS), rank=1)
    return SearchResultBundle(task_id=task_id, query_id=call.query.query_id, query_text=call.query.text,
                              query_intent=call.query.intent, provider=call.provider, executed_at=executed_at,
                              results=[item], stats=SearchResultStats(total_returned=0, failed_count=1))
