"""Single-shot "search + summary" (docs/ask.md): one OpenRouter chat completion
with web search turned on returns both the answer and its `url_citation`
annotations, so no separate search round and summary round are needed.

    ask(catalog, question, options, settings) -> AskResult

The request, its retry and the reading of the completion are in
tasks.ask.openrouter; the plan and the errors in tasks.ask.plan. What one call
leaves behind, all written here:
- `ask_messages`: one row per call, also a failed or over-budget one (request
  count, engine, context size, max_results, citation count, cost, reason);
- `citations`: one row per annotation, linked by message_id;
- `review_queue`: answers that came back without any citation;
- the lake: the request and response JSON under
  runs/task_id=<task>/run_id=<message_id>/openrouter_response.json, and the
  answer as a SearchResultBundle (provider "openrouter", intent "web", one item
  per cited page) landed like any search, so consolidation reads it too.

Cost policy: an answer that cost more than the cap is recorded (it was paid
for) but not landed, and the call fails, so a run stops at its budget.
Everything stored or logged is scrubbed of the API key as a second line of
defence.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import httpx

from schemas.ask import AskOptions, AskResult, UrlCitation
from schemas.bundle import MAX_SNIPPET_CHARS, MAX_TITLE_CHARS, MAX_URL_CHARS, SearchResultBundle, SearchResultItem, clipped
from schemas.urls import UnsafeURL, WEB_SCHEMES, check_lake_url, source_id_for, url_scheme
from tasks.ask.plan import AskBudgetExceeded, AskError, AskPlan, plan_ask
from tasks.lake.catalog import Catalog, commit_scope, open_catalog
from tasks.common.settings import Settings, secret_value
from tasks.common.text import counted
from tasks.common.http import endpoint_url, make_client, redact
from tasks.common.llm import choice_message
from tasks.lake.files import Lake, LakeWrite
from tasks.lake.landing import land_bundles
from tasks.ask.openrouter import Exchange, Usage, exchange, parse_citations, parse_usage, request_body

log = logging.getLogger(__name__)

PROVIDER = "openrouter"
ASK_STEP = "search_summary"
ASK_STEPS = [(ASK_STEP, 1.0, "搜索+摘要 search + summary")]  # one step, not "search" then "summary"
RESPONSE_FILE = "openrouter_response.json"


# -- the bundle ------------------------------------------------------------------

def to_bundle(plan: AskPlan, answer: str, citations: list[UrlCitation], snippet_chars: int) -> SearchResultBundle:
    """The answer as a search bundle: one item per cited page (a page cited
    for several passages is one item), ranked in citation order. The score is
    that order, 1.0 for the first page falling to 0.5 for the last: the model
    cites what it leaned on first, and every cited page earned a place."""
    pages: list[UrlCitation] = []
    seen: set[str] = set()
    for citation in citations:
        if not _landable(citation.url) or source_id_for(citation.url) in seen:
            continue
        seen.add(source_id_for(citation.url))
        pages.append(citation)
    step = 0.5 / max(len(pages) - 1, 1)
    items = [SearchResultItem(
        rank=rank, url=c.url, title=clipped(c.title or c.domain or c.url, MAX_TITLE_CHARS),
        snippet=c.content[:min(snippet_chars, MAX_SNIPPET_CHARS)] if c.content else None,
        captured_at=c.fetched_at, score_final=round(1.0 - step * (rank - 1), 6), status="ok",
    ) for rank, c in enumerate(pages, start=1)]
    return SearchResultBundle(
        task_id=plan.task_id, query_id=plan.query_id, query_text=plan.question, query_intent="web",
        provider=PROVIDER, executed_at=plan.created_at, results=items,
        # kept in the raw bundle JSON in the lake: the answer belongs with its sources
        answer=answer, message_id=plan.message_id, model=plan.model, no_citations=not citations,
    )


def _landable(url: str) -> bool:
    """Only web pages enter the lake from a model's answer (never file: or
    javascript:), so one odd annotation cannot get the whole bundle refused."""
    if url_scheme(url) not in WEB_SCHEMES or len(url) > MAX_URL_CHARS:
        return False
    try:
        check_lake_url(url)
    except UnsafeURL:
        return False
    return True


# -- recording -------------------------------------------------------------------

@dataclass
class Outcome:
    status: str
    answer: str | None = None
    citations: list[UrlCitation] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    failure_reason: str | None = None


def _scrubbed_json(value: Any, key: str) -> str:
    return redact(json.dumps(value, ensure_ascii=False, default=str), [key])


def record(catalog: Catalog, plan: AskPlan, ex: Exchange, outcome: Outcome, body: dict, key: str) -> None:
    """The message row, its citations, its review entry and the raw exchange
    in the lake, in one catalog transaction."""
    write = LakeWrite(catalog.lake)
    raw_path = None
    if ex.doc is not None:
        raw_path = Lake.run_key(plan.task_id, plan.message_id, RESPONSE_FILE)
        audit = {"request": body, "response": ex.doc, "attempts": [asdict(a) for a in ex.attempts]}
        write.put(raw_path, _scrubbed_json(audit, key).encode("utf-8"))
    no_citations = outcome.answer is not None and not outcome.citations
    reason = redact(outcome.failure_reason, [key]) if outcome.failure_reason else None

    def rows(cat: Catalog) -> None:
        cat.run("ask_message_insert", {
            "message_id": plan.message_id, "task_id": plan.task_id, "query_id": plan.query_id,
            "question": plan.question, "answer": outcome.answer, "model": plan.model, "engine": plan.engine,
            "search_mode": plan.search_mode, "search_context_size": plan.search_context_size,
            "max_results": plan.max_results, "request_count": len(ex.attempts),
            "citation_count": len(outcome.citations), "no_citations": no_citations,
            "cost": outcome.usage.cost, "max_cost": plan.max_cost,
            "prompt_tokens": outcome.usage.prompt_tokens, "completion_tokens": outcome.usage.completion_tokens,
            "web_search_requests": outcome.usage.web_search_requests, "duration_ms": ex.duration_ms,
            "http_status": ex.http_status, "status": outcome.status, "failure_reason": reason,
            "attempts": _scrubbed_json([asdict(a) for a in ex.attempts], key), "raw_path": raw_path,
            "created_at": plan.created_at,
        })
        for c in outcome.citations:
            cat.run("ask_citation_insert", {
                "citation_id": c.citation_id, "message_id": plan.message_id, "task_id": plan.task_id,
                "position": c.position, "url": c.url, "title": c.title, "content": c.content,
                "start_index": c.start_index, "end_index": c.end_index, "domain": c.domain,
                "fetched_at": c.fetched_at,
            })
        if no_citations and outcome.status == "ok":
            cat.run("ask_review_add", [plan.message_id, plan.task_id, "no_citations", plan.created_at,
                                       _scrubbed_json(ex.doc, key)])

    catalog.transaction(rows, write, action="ask", task_id=plan.task_id,
                        detail=f"{outcome.status}, {counted(len(outcome.citations), 'citation')}")


# -- the whole call ----------------------------------------------------------------

def ask(settings: Settings, question: str, options: AskOptions | None = None,
        client: httpx.Client | None = None, *, tracker=None) -> AskResult:
    """Ask once with web search; record, land and return the cited answer.
    Raises AskError (AskBudgetExceeded above the cost cap) with a one-line
    message after recording the failed call. `tracker`, a ProgressTracker
    with the step ASK_STEP, receives start/complete/error events. The catalog
    is opened only to record and land, never while OpenRouter answers."""
    plan = plan_ask(question, options or AskOptions(), settings)
    key = secret_value(settings.openrouter_api_key)
    if not key:
        raise AskError("OPENROUTER_API_KEY is not set: `ask` needs an OpenRouter key")
    if tracker is not None:
        tracker.start(ASK_STEP, metadata=_observed(plan))
    try:
        result = _ask(plan, settings, client, key)
    except AskError as exc:
        if tracker is not None:
            tracker.error(ASK_STEP, error=str(exc), metadata=_observed(plan))
        raise
    if tracker is not None:
        tracker.complete(ASK_STEP, result=result.model_dump(mode="json", include={"answer", "citations"}),
                         metadata={**_observed(plan), "citationCount": len(result.citations),
                                   "noCitations": result.no_citations, "cost": result.cost,
                                   "requestCount": result.request_count, "durationMs": result.duration_ms})
    return result


def _observed(plan: AskPlan) -> dict:
    return {"taskId": plan.task_id, "messageId": plan.message_id, "engine": plan.engine,
            "searchContextSize": plan.search_context_size, "maxResults": plan.max_results}


def _ask(plan: AskPlan, settings: Settings, client: httpx.Client | None, key: str) -> AskResult:
    url = endpoint_url(settings.openrouter_base_url, "chat/completions")
    body = request_body(plan)
    owned = client is None
    client = client or make_client(timeout=plan.timeout)
    try:
        ex = exchange(client, url, body, key, plan, settings.ask_retry_after_max, settings.secret_values())
    finally:
        if owned:
            client.close()

    if ex.doc is None:
        outcome = Outcome("failed", failure_reason=ex.failure)
        _record(settings, plan, ex, outcome, body, key)
        _log(plan, ex, outcome)
        raise AskError(f"ask failed after {len(ex.attempts)} request(s) to OpenRouter: {ex.failure} "
                       f"(recorded as message {plan.message_id})", message_id=plan.message_id)

    fetched_at = datetime.now(timezone.utc)
    outcome = Outcome("ok", answer=choice_message(ex.doc)["content"],
                      citations=parse_citations(ex.doc, plan.message_id, fetched_at), usage=parse_usage(ex.doc))
    if plan.max_cost is not None and outcome.usage.cost is not None and outcome.usage.cost > plan.max_cost:
        outcome.status = "over_budget"
        outcome.failure_reason = f"cost ${outcome.usage.cost:.4f} above the cap ${plan.max_cost:.4f}"
        _record(settings, plan, ex, outcome, body, key)
        _log(plan, ex, outcome)
        raise AskBudgetExceeded(
            f"ask stopped: the answer cost ${outcome.usage.cost:.4f}, above the ${plan.max_cost:.4f} cap "
            f"(SEARCHLAKE_ASK_MAX_COST); recorded as message {plan.message_id}, nothing landed",
            message_id=plan.message_id, status="over_budget")
    if outcome.usage.cost is None and plan.max_cost is not None:
        log.warning("ask %s: the response reports no usage.cost; the cost cap could not be checked", plan.message_id)

    # Recorded before landing: the call is on record even if landing fails
    # (the audit file in the lake holds everything needed to land it again).
    bundle = to_bundle(plan, outcome.answer, outcome.citations, settings.content_max_chars)
    with open_catalog(settings, "ask: record") as catalog:
        record(catalog, plan, ex, outcome, body, key)
        _log(plan, ex, outcome)
        with commit_scope(f"ask {plan.task_id}", task_id=plan.task_id):
            report = land_bundles(catalog, [bundle], source=f"{PROVIDER}-ask")
    if report.refused:  # not expected: ids and URLs are checked when the bundle is built
        raise AskError(f"the answer was recorded as message {plan.message_id} but could not land: "
                       f"{report.refused[0].line()}", message_id=plan.message_id)
    return _result(plan, ex, outcome)


def _record(settings: Settings, plan: AskPlan, ex: Exchange, outcome: Outcome, body: dict, key: str) -> None:
    with open_catalog(settings, "ask: record") as catalog:
        record(catalog, plan, ex, outcome, body, key)


def _log(plan: AskPlan, ex: Exchange, outcome: Outcome) -> None:
    """One line per ask: request count, engine, context size, max_results, citations,
    failure reason; never the key or the body."""
    level = logging.INFO if outcome.status == "ok" and outcome.citations else logging.WARNING
    log.log(level, "ask %s task=%s status=%s requests=%d engine=%s mode=%s context=%s max_results=%d "
            "citations=%d no_citations=%s cost=%s reason=%s", plan.message_id, plan.task_id, outcome.status,
            len(ex.attempts), plan.engine, plan.search_mode, plan.search_context_size, plan.max_results,
            len(outcome.citations), outcome.answer is not None and not outcome.citations, outcome.usage.cost,
            outcome.failure_reason)


def _result(plan: AskPlan, ex: Exchange, outcome: Outcome) -> AskResult:
    return AskResult(
        message_id=plan.message_id, task_id=plan.task_id, query_id=plan.query_id, question=plan.question,
        answer=outcome.answer or "", citations=outcome.citations, no_citations=not outcome.citations,
        model=plan.model, engine=plan.engine, search_mode=plan.search_mode,
        search_context_size=plan.search_context_size, max_results=plan.max_results,
        request_count=len(ex.attempts), cost=outcome.usage.cost, prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens, duration_ms=ex.duration_ms, status=outcome.status,
        created_at=plan.created_at,
    )
