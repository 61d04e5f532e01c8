"""The one client for OpenAI-compatible chat endpoints (OpenRouter, DashScope's
compatible mode, Ollama, vLLM): post_completion, used by chat() here and by
the ask stage (tasks/ask/openrouter.py, with its own answer checks); and the ---THOUGHT--- / ---JSON--- answer
format: the model thinks freely, then writes one JSON document, which is
parsed and repaired for what models commonly break (code fences, comments,
trailing or missing commas, prose around it)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import json_repair

from tasks.common.errors import InternalError, RemoteError
from tasks.common.http import (Attempt, CallPolicy, Outbound, call, endpoint_url, json_body, make_client,
                               require_success, safe_url, scrub)
from tasks.common.settings import Settings, secret_value

THOUGHT_MARK = "---THOUGHT---"
JSON_MARK = "---JSON---"
FORMAT_INSTRUCTIONS = (
    f"Answer in two parts. First a line {THOUGHT_MARK} followed by your reasoning. "
    f"Then a line {JSON_MARK} followed by exactly one JSON object and nothing after it."
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class LLMError(InternalError):
    """The model could not be reached or its answer could not be used."""


@dataclass
class ChatAnswer:
    content: str
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    duration_ms: int = 0
    raw: dict = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    temperature: float = 0.2
    retries: int = 0
    # every configured secret: a server that echoes the request must not get one stored
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> "LLMConfig | None":
        if not (settings.llm_base_url and settings.llm_model):
            return None
        return cls(settings.llm_base_url.rstrip("/"), settings.llm_model,
                   secret_value(settings.llm_api_key), timeout=max(settings.http_timeout, 30.0),
                   retries=settings.http_retries, secrets=settings.secret_values())

    @property
    def where(self) -> str:
        """The endpoint as messages may name it: no credentials, no query."""
        return safe_url(self.base_url)


def chat(config: LLMConfig, messages: list[dict], *, client: httpx.Client | None = None,
         extra: dict | None = None) -> ChatAnswer:
    """One chat completion through the shared HTTP path; errors become
    LLMError, and neither they nor the answer carry a configured secret."""
    body = {"model": config.model, "messages": messages, "temperature": config.temperature, **(extra or {})}
    owned = client is None
    client = client or make_client(timeout=config.timeout)
    started = time.monotonic()
    try:
        doc = post_completion(client, endpoint_url(config.base_url, "chat/completions"), body, key=config.api_key,
                              policy=CallPolicy(retries=config.retries, timeout=config.timeout, secrets=config.secrets))
    except RemoteError as exc:
        raise LLMError(_failure(config, exc)) from None
    finally:
        if owned:
            client.close()
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    return ChatAnswer(content=choice_message(doc).get("content") or "", model=doc.get("model"),
                      prompt_tokens=usage.get("prompt_tokens") or 0,
                      completion_tokens=usage.get("completion_tokens") or 0, cost=usage.get("cost"),
                      duration_ms=int((time.monotonic() - started) * 1000), raw=doc)


def post_completion(client: httpx.Client, url: str, body: dict, *, key: str | None, policy: CallPolicy,
                    headers: Mapping[str, str] | None = None, read: Callable[[httpx.Response], dict] | None = None,
                    attempts: list[Attempt] | None = None) -> dict:
    """The one chat-completions client: POST `body` to `url` with the key as
    a Bearer token, through the shared HTTP path under `policy` (retries,
    Retry-After, redaction; the key joins its secrets), and return the
    completion document scrubbed of every secret (a server may echo the
    request, and with it the key). `read` decides which answers are usable
    (read_completion unless given); every failure is a RemoteError."""
    policy = replace(policy, secrets=(key, *policy.secrets))
    sent = {**({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})}
    doc = call(client, Outbound("POST", url, headers=sent, json=body), policy, read=read or read_completion,
               attempts=attempts)
    return scrub(doc, policy.secrets)


def read_completion(response: httpx.Response) -> dict:
    """A successful answer that is a chat completion, else a RemoteError."""
    doc = json_body(require_success(response))
    if choice_message(doc) is None:
        raise RemoteError("bad_response", "not a chat completion", http_status=response.status_code)
    return doc


def choice_message(doc: dict) -> dict | None:
    """The assistant message of the first choice, where the answer and its
    annotations are; None when the document is not a chat completion."""
    try:
        message = doc["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return None
    return message if isinstance(message, dict) else None


def _failure(config: LLMConfig, exc: RemoteError) -> str:
    if exc.code == "timeout":
        return f"the model at {config.where} did not answer within {config.timeout:.0f} s"
    if exc.code == "network":
        return f"cannot reach the model at {config.where}: {exc.reason}"
    if exc.code == "bad_response":
        return f"the model at {config.where} sent a response that is not a chat completion"
    return f"the model at {config.where} answered {exc.reason}"


def split_thought_json(text: str) -> tuple[str, str]:
    """The thought and the JSON part of an answer (the whole answer when the
    model forgot the marks)."""
    if JSON_MARK in text:
        before, _, after = text.rpartition(JSON_MARK)
        return before.replace(THOUGHT_MARK, "").strip(), after.strip()
    return "", text.strip()


def parse_json_answer(text: str) -> dict[str, Any]:
    """The JSON object of a THOUGHT/JSON answer, repaired; LLMError if none."""
    _, part = split_thought_json(text)
    fenced = _FENCE.search(part)
    if fenced:
        part = fenced.group(1)
    start = part.find("{")
    if start < 0:
        raise LLMError("the answer contains no JSON object")
    try:
        value = json.loads(part[start:part.rfind("}") + 1])
    except ValueError:
        value = json_repair.repair_json(part[start:], return_objects=True)
    if not isinstance(value, dict) or not value:
        raise LLMError("the answer's JSON part is not a usable object")
    return value
