"""The OpenRouter side of an ask (docs/ask.md): the chat-completions request
with web search turned on, sent through the shared chat client
(tasks.common.llm.post_completion) with at most one retry, and the
completion read back into its answer, `url_citation` annotations and usage.

Failure policy: a failed request is retried once (after Retry-After, capped),
then the exchange reports one clear line. 401/402/403 are not retried: a bad
key, missing credit or a moderation block will not change a second later.
The API key is only ever put in the Authorization header; error text taken
from a response is scrubbed of it as a second line of defence.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from schemas.ask import UrlCitation
from schemas.urls import domain_of
from tasks.ask.plan import AskPlan
from schemas.errors import RemoteError
from tasks.common.http import Attempt, CallPolicy, json_body, status_error, user_agent
from tasks.common.llm import choice_message, post_completion

log = logging.getLogger(__name__)

NO_RETRY_STATUSES = frozenset({401, 402, 403})
APP_TITLE = "searchlake"


# -- the request -------------------------------------------------------------------

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


def exchange(client: httpx.Client, url: str, body: dict, key: str, plan: AskPlan,
             retry_after_max: float, secrets: tuple[str, ...] = ()) -> Exchange:
    """The request through the shared chat client, retried once; every
    attempt is recorded, and the failure (if any) is the last attempt's error."""
    headers = {"User-Agent": user_agent(), "X-Title": APP_TITLE, "X-OpenRouter-Title": APP_TITLE}
    result = Exchange()
    started = time.monotonic()
    try:
        policy = CallPolicy(retries=1, timeout=plan.timeout, max_retry_wait=retry_after_max, secrets=secrets)
        result.doc = post_completion(client, url, body, key=key, policy=policy, headers=headers, read=_completion,
                                     attempts=result.attempts)
    except RemoteError as exc:
        log.warning("ask %s failed: %s", plan.message_id, exc.reason)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


def _completion(response: httpx.Response) -> dict:
    """The completion document, or a RemoteError saying why it cannot be
    used. 401/402/403 are final; anything else may pass on a second try."""
    if response.status_code >= 400:
        raise status_error(response, retryable=response.status_code not in NO_RETRY_STATUSES)
    try:
        doc = json_body(response)
    except RemoteError:
        raise _unusable("bad response: body is not JSON") from None
    if doc.get("error"):  # an error raised after generation began comes with HTTP 200
        error = doc["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise _unusable(f"error in response: {' '.join(str(message).split())[:200]}")
    message = choice_message(doc)
    if message is None:
        raise _unusable("bad response: not a chat completion")
    if not (message.get("content") or "").strip():
        raise _unusable("bad response: the answer is empty")
    return doc


def _unusable(reason: str) -> RemoteError:
    return RemoteError("bad_response", reason, retryable=True)


# -- reading the answer ------------------------------------------------------------

def parse_citations(doc: dict, message_id: str, fetched_at: datetime) -> list[UrlCitation]:
    """`url_citation` annotations, in order. Tolerates both the nested
    OpenAI shape and a flat one, and skips annotations without a URL."""
    annotations = (choice_message(doc) or {}).get("annotations") or []
    found: list[UrlCitation] = []
    for note in annotations if isinstance(annotations, list) else []:
        if not isinstance(note, dict) or note.get("type", "url_citation") != "url_citation":
            continue
        data = note.get("url_citation") if isinstance(note.get("url_citation"), dict) else note
        url = data.get("url")
        if not isinstance(url, str) or not url.strip():
            continue
        found.append(UrlCitation(
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
