"""Single-shot "search + summary" (spec 004): one OpenRouter chat completion
with web search turned on returns both the answer and its `url_citation`
annotations, so no separate search round and summary round are needed.

    ask(catalog, question, options, settings) -> AskResult

What one call leaves behind:
- `ask_messages`: one row per call, also a failed or over-budget one (request
  count, engine, context size, max_results, citation count, cost, reason);
- `citations`: one row per annotation, linked by message_id;
- `review_queue`: answers that came back without any citation;
- the lake: the request and response JSON under
  runs/task_id=<task>/run_id=<message_id>/openrouter_response.json, and the
  answer as a SearchResultBundle (provider "openrouter", intent "web", one item
  per cited page) landed like any search, so consolidation reads it too.

Failure policy: a failed request is retried once (after Retry-After, capped),
then the call fails with one clear line. 401/402/403 are not retried: a bad
key, missing credit or a moderation block will not change a second later.
Cost policy: an answer that cost more than the cap is recorded (it was paid
for) but not landed, and the call fails, so a run stops at its budget.
The API key is only ever put in the Authorization header; everything stored
or logged is scrubbed of it as a second line of defence.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import httpx

from schemas.ask import AskOptions, AskResult, Citation
from schemas.bundle import SearchResultBundle, SearchResultItem
from schemas.urls import UnsafeURL, WEB_SCHEMES, check_lake_url, domain_of, source_id_for, url_scheme
from tasks.catalog import Catalog
from tasks.config import Settings, secret_value
from tasks.http import redact, retry_after_seconds, user_agent
from tasks.lake import Lake, LakeWrite
from tasks.landing import land_bundles

log = logging.getLogger(__name__)

PROVIDER = "openrouter"
ASK_STEP = "search_summary"
ASK_STEPS = [(ASK_STEP, 1.0, "搜索+摘要 search + summary")]  # spec 004 FR-016: one step, not two
NO_RETRY_STATUSES = frozenset({401, 402, 403})
DEFAULT_RETRY_WAIT = 1.0  # seconds, when a retryable failure names no Retry-After
RESPONSE_FILE = "openrouter_response.json"
APP_TITLE = "searchlake"


class AskError(Exception):
    """The ask failed; the message is one line fit for the user."""

    def __init__(self, message: str, *, message_id: str | None = None, status: str = "failed"):
        super().__init__(message)
        self.message_id = message_id
        self.status = status


class AskBudgetExceeded(AskError):
    """The answer cost more than the cap."""


# -- the plan of one call -------------------------------------------------------

@dataclass(frozen=True)
class AskPlan:
    question: str
    model: str
    engine: str
    search_mode: str
    search_context_size: str
    max_results: int
    max_cost: float | None
    timeout: float
    task_id: str
    message_id: str
    query_id: str
    created_at: datetime


def plan_ask(question: str, options: AskOptions, settings: Settings, now: datetime | None = None) -> AskPlan:
    """Settings give the defaults, options override them per call."""
    question = question.strip()
    if not question:
        raise AskError("the question is empty")
    now = now or datetime.now(timezone.utc)
    message_id = secrets.token_hex(16)
    stamp = now.strftime("%Y%m%d-%H%M%S")
    return AskPlan(
        question=question,
        model=options.model or settings.ask_model,
        engine=options.engine,
        search_mode=options.search_mode or settings.ask_web_search,
        search_context_size=options.search_context_size or settings.ask_search_context_size,
        max_results=settings.ask_max_results if options.max_results is None else options.max_results,
        max_cost=options.max_cost if options.max_cost is not None else settings.ask_max_cost,
        timeout=options.timeout or settings.ask_timeout,
        task_id=options.task_id or f"ask-{stamp}-{message_id[:4]}",
        # unique within a task, and in time order when one task holds many asks
        query_id=f"ask-{now.strftime('%Y%m%d%H%M%S%f')}-{message_id[:6]}",
        message_id=message_id,
        created_at=now,
    )


def request_body(plan: AskPlan) -> dict[str, Any]:
    """The chat-completions body: the question plus web search, in either the
    plugin form or the server-tool form."""
    body: dict[str, Any] = {"model": plan.model, "messages": [{"role": "user", "content": plan.question}]}
    engine = {} if plan.engine == "auto" else {"engine": plan.engine}  # left out = auto
    if plan.search_mode == "plugin":
        body["plugins"] = [{"id": "web", "max_results": plan.max_results, **engine}]
        body["web_search_options"] = {"search_context_size": plan.search_context_size}
    elif plan.max_results > 0:
        # The server tool takes max_results 1-25; 0 results means no web search at all.
        body["tools"] = [{"type": "openrouter:web_search", "parameters": {
            **engine, "max_results": plan.max_results, "search_context_size": plan.search_context_size}}]
    return body


# -- the exchange: one request, and at most one retry ------------------------------

@dataclass
class Attempt:
    http_status: int | None = None
    error: str | None = None
    retry_after: float | None = None
    duration_ms: int = 0


@dataclass
class Exchange:
    doc: dict | None = None
    attempts: list[Attempt] = field(default_factory=list)
    duration_ms: int = 0

    @property
    def failure(self) -> str | None:
        return None if self.doc is not None else self.attempts[-1].error

    @property
    def http_status(self) -> int | None:
        return self.attempts[-1].http_status if self.attempts else None


def _sleep(seconds: float) -> None:
    # Looked up at call time so tests can replace it and not wait.
    time.sleep(seconds)


def exchange(client: httpx.Client, url: str, body: dict, key: str, plan: AskPlan,
             retry_after_max: float) -> Exchange:
    headers = {"Authorization": f"Bearer {key}", "User-Agent": user_agent(),
               "X-Title": APP_TITLE, "X-OpenRouter-Title": APP_TITLE}
    result = Exchange()
    started = time.monotonic()
    for number in (1, 2):
        attempt, doc, retryable = _send_once(client, url, body, headers, plan.timeout, key)
        result.attempts.append(attempt)
        if doc is not None:
            result.doc = doc
            break
        if number == 2 or not retryable:
            break
        wait = min(retry_after_max, DEFAULT_RETRY_WAIT if attempt.retry_after is None else attempt.retry_after)
        log.warning("ask %s: %s; retrying once in %.1fs", plan.message_id, attempt.error, wait)
        _sleep(wait)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


def _send_once(client: httpx.Client, url: str, body: dict, headers: dict, timeout: float,
               key: str) -> tuple[Attempt, dict | None, bool]:
    """One POST: (what happened, the completion or None, worth a retry)."""
    started = time.monotonic()
    attempt = Attempt()
    try:
        response = client.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        attempt.error = f"no answer within {timeout:g} s (timeout)"
        return _timed(attempt, started), None, True
    except httpx.HTTPError as exc:
        # The exception text is left out: it may quote the request.
        attempt.error = f"network error: {type(exc).__name__}"
        return _timed(attempt, started), None, True
    _timed(attempt, started)
    attempt.http_status = response.status_code
    if response.status_code >= 400:
        attempt.error = redact(f"HTTP {response.status_code}: {_error_detail(response)}", [key])
        attempt.retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        return attempt, None, response.status_code not in NO_RETRY_STATUSES
    doc, problem = _completion(response)
    if problem:
        attempt.error = redact(problem, [key])
        return attempt, None, True
    return attempt, doc, False


def _timed(attempt: Attempt, started: float) -> Attempt:
    attempt.duration_ms = int((time.monotonic() - started) * 1000)
    return attempt


def _error_detail(response: httpx.Response) -> str:
    """OpenRouter's `{"error": {"code", "message", "metadata": {"error_type"}}}`
    as one short line; the reason phrase when the body says nothing."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if not isinstance(error, dict):
        return response.reason_phrase or "error"
    message = " ".join(str(error.get("message") or response.reason_phrase).split())[:200]
    kind = (error.get("metadata") or {}).get("error_type") if isinstance(error.get("metadata"), dict) else None
    return f"{kind}: {message}" if kind else message


def _completion(response: httpx.Response) -> tuple[dict | None, str | None]:
    """The completion document, or why it cannot be used."""
    try:
        doc = response.json()
    except ValueError:
        return None, "bad response: body is not JSON"
    if not isinstance(doc, dict):
        return None, "bad response: not a chat completion"
    if doc.get("error"):  # an error raised after generation began comes with HTTP 200
        error = doc["error"]
        message = error.get("message") if isinstance(error, dict) else error
        return None, f"error in response: {' '.join(str(message).split())[:200]}"
    message = _message(doc)
    if message is None:
        return None, "bad response: not a chat completion"
    if not (message.get("content") or "").strip():
        return None, "bad response: the answer is empty"
    return doc, None


def _message(doc: dict) -> dict | None:
    try:
        message = doc["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return None
    return message if isinstance(message, dict) else None


# -- reading the answer ------------------------------------------------------------

def parse_citations(doc: dict, message_id: str, fetched_at: datetime) -> list[Citation]:
    """`url_citation` annotations, in order. Tolerates both the nested
    OpenAI shape and a flat one, and skips annotations without a URL."""
    annotations = (_message(doc) or {}).get("annotations") or []
    found: list[Citation] = []
    for note in annotations if isinstance(annotations, list) else []:
        if not isinstance(note, dict) or note.get("type", "url_citation") != "url_citation":
            continue
        data = note.get("url_citation") if isinstance(note.get("url_citation"), dict) else note
        url = data.get("url")
        if not isinstance(url, str) or not url.strip():
            continue
        found.append(Citation(
            citation_id=f"{message_id}-{len(found)}", position=len(found), url=url.strip(),
            title=str(data.get("title") or ""), content=_text_or_none(data.get("content")),
            start_index=_int_or_none(data.get("start_index")), end_index=_int_or_none(data.get("end_index")),
            domain=_domain(url), fetched_at=fetched_at,
        ))
    return found


def _domain(url: str) -> str:
    try:
        return domain_of(url)
    except ValueError:  # e.g. a malformed IPv6 literal
        return ""


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Usage:
    cost: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    web_search_requests: int | None = None


def parse_usage(doc: dict) -> Usage:
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    tool_use = usage.get("server_tool_use") if isinstance(usage.get("server_tool_use"), dict) else {}
    try:
        cost = float(usage["cost"]) if usage.get("cost") is not None else None
    except (TypeError, ValueError):
        cost = None
    return Usage(cost=cost, prompt_tokens=_int_or_none(usage.get("prompt_tokens")) or 0,
                 completion_tokens=_int_or_none(usage.get("completion_tokens")) or 0,
                 web_search_requests=_int_or_none(tool_use.get("web_search_requests")))


# -- the bundle ------------------------------------------------------------------

def to_bundle(plan: AskPlan, answer: str, citations: list[Citation], snippet_chars: int) -> SearchResultBundle:
    """The answer as a search bundle: one item per cited page (a page cited
    for several passages is one item), ranked in citation order. The score is
    that order, 1.0 for the first page falling to 0.5 for the last: the model
    cites what it leaned on first, and every cited page earned a place."""
    pages: list[Citation] = []
    seen: set[str] = set()
    for citation in citations:
        if not _landable(citation.url) or source_id_for(citation.url) in seen:
            continue
        seen.add(source_id_for(citation.url))
        pages.append(citation)
    step = 0.5 / max(len(pages) - 1, 1)
    items = [SearchResultItem(
        rank=rank, url=c.url, title=c.title or c.domain or c.url,
        snippet=c.content[:snippet_chars] if c.content else None,
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
    if url_scheme(url) not in WEB_SCHEMES:
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
    citations: list[Citation] = field(default_factory=list)
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
        write.stage_bytes(raw_path, _scrubbed_json(audit, key).encode("utf-8"))
    no_citations = outcome.answer is not None and not outcome.citations
    reason = redact(outcome.failure_reason, [key]) if outcome.failure_reason else None

    def rows(cat: Catalog) -> None:
        cat.run("ask_message_insert", [
            plan.message_id, plan.task_id, plan.query_id, plan.question, outcome.answer, plan.model,
            plan.engine, plan.search_mode, plan.search_context_size, plan.max_results, len(ex.attempts),
            len(outcome.citations), no_citations, outcome.usage.cost, plan.max_cost,
            outcome.usage.prompt_tokens, outcome.usage.completion_tokens, outcome.usage.web_search_requests,
            ex.duration_ms, ex.http_status, outcome.status, reason,
            _scrubbed_json([asdict(a) for a in ex.attempts], key), raw_path, plan.created_at,
        ])
        for c in outcome.citations:
            cat.run("ask_citation_insert", [c.citation_id, plan.message_id, plan.task_id, c.position, c.url,
                                            c.title, c.content, c.start_index, c.end_index, c.domain, c.fetched_at])
        if no_citations and outcome.status == "ok":
            cat.run("ask_review_add", [plan.message_id, plan.task_id, "no_citations", plan.created_at,
                                       _scrubbed_json(ex.doc, key)])

    catalog.commit_write(write, rows)


# -- the whole call ----------------------------------------------------------------

def ask(catalog: Catalog, question: str, options: AskOptions | None = None, settings: Settings | None = None,
        client: httpx.Client | None = None, *, tracker=None) -> AskResult:
    """Ask once with web search; record, land and return the cited answer.
    Raises AskError (AskBudgetExceeded above the cost cap) with a one-line
    message after recording the failed call. `tracker`, a ProgressTracker
    with the step ASK_STEP, receives start/complete/error events."""
    settings = settings or catalog.settings
    plan = plan_ask(question, options or AskOptions(), settings)
    key = secret_value(settings.openrouter_api_key)
    if not key:
        raise AskError("OPENROUTER_API_KEY is not set: `ask` needs an OpenRouter key")
    if tracker is not None:
        tracker.start(ASK_STEP, metadata=_observed(plan))
    try:
        result = _ask(catalog, plan, settings, client, key)
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


def _ask(catalog: Catalog, plan: AskPlan, settings: Settings, client: httpx.Client | None, key: str) -> AskResult:
    url = f"{settings.openrouter_base_url.rstrip('/')}/chat/completions"
    body = request_body(plan)
    owned = client is None
    client = client or httpx.Client(timeout=plan.timeout, follow_redirects=False)
    try:
        ex = exchange(client, url, body, key, plan, settings.ask_retry_after_max)
    finally:
        if owned:
            client.close()

    if ex.doc is None:
        outcome = Outcome("failed", failure_reason=ex.failure)
        record(catalog, plan, ex, outcome, body, key)
        _log(plan, ex, outcome)
        raise AskError(f"ask failed after {len(ex.attempts)} request(s) to OpenRouter: {ex.failure} "
                       f"(recorded as message {plan.message_id})", message_id=plan.message_id)

    fetched_at = datetime.now(timezone.utc)
    outcome = Outcome("ok", answer=_message(ex.doc)["content"],
                      citations=parse_citations(ex.doc, plan.message_id, fetched_at), usage=parse_usage(ex.doc))
    if plan.max_cost is not None and outcome.usage.cost is not None and outcome.usage.cost > plan.max_cost:
        outcome.status = "over_budget"
        outcome.failure_reason = f"cost ${outcome.usage.cost:.4f} above the cap ${plan.max_cost:.4f}"
        record(catalog, plan, ex, outcome, body, key)
        _log(plan, ex, outcome)
        raise AskBudgetExceeded(
            f"ask stopped: the answer cost ${outcome.usage.cost:.4f}, above the ${plan.max_cost:.4f} cap "
            f"(SEARCHLAKE_ASK_MAX_COST); recorded as message {plan.message_id}, nothing landed",
            message_id=plan.message_id, status="over_budget")
    if outcome.usage.cost is None and plan.max_cost is not None:
        log.warning("ask %s: the response reports no usage.cost; the cost cap could not be checked", plan.message_id)

    # Recorded before landing: the call is on record even if landing fails
    # (the audit file in the lake holds everything needed to land it again).
    record(catalog, plan, ex, outcome, body, key)
    _log(plan, ex, outcome)
    report = land_bundles(catalog, [to_bundle(plan, outcome.answer, outcome.citations, settings.content_max_chars)],
                          source=f"{PROVIDER}-ask")
    if report.refused:  # not expected: ids and URLs are checked when the bundle is built
        raise AskError(f"the answer was recorded as message {plan.message_id} but could not land: "
                       f"{report.refused[0].line()}", message_id=plan.message_id)
    return _result(plan, ex, outcome)


def _log(plan: AskPlan, ex: Exchange, outcome: Outcome) -> None:
    """The observability line of spec 004 FR-010; never the key or the body."""
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
