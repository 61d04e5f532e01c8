"""A client for any OpenAI-compatible chat endpoint (OpenRouter, DashScope's
compatible mode, Ollama, vLLM) and the ---THOUGHT--- / ---JSON--- answer
format: the model thinks freely, then writes one JSON document, which is
parsed and repaired for what models commonly break (code fences, comments,
trailing or missing commas, prose around it)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import json_repair

from tasks.common.settings import Settings, secret_value

THOUGHT_MARK = "---THOUGHT---"
JSON_MARK = "---JSON---"
FORMAT_INSTRUCTIONS = (
    f"Answer in two parts. First a line {THOUGHT_MARK} followed by your reasoning. "
    f"Then a line {JSON_MARK} followed by exactly one JSON object and nothing after it."
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class LLMError(Exception):
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
    api_key: str | None = None
    timeout: float = 60.0
    temperature: float = 0.2

    @classmethod
    def from_settings(cls, settings: Settings) -> "LLMConfig | None":
        if not (settings.llm_base_url and settings.llm_model):
            return None
        return cls(settings.llm_base_url.rstrip("/"), settings.llm_model,
                   secret_value(settings.llm_api_key), timeout=max(settings.http_timeout, 30.0))


def chat(config: LLMConfig, messages: list[dict], *, client: httpx.Client | None = None,
         extra: dict | None = None) -> ChatAnswer:
    """One chat completion; errors become LLMError with no secret in the text."""
    body = {"model": config.model, "messages": messages, "temperature": config.temperature, **(extra or {})}
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    owned = client is None
    client = client or httpx.Client(timeout=config.timeout)
    started = time.monotonic()
    try:
        response = client.post(f"{config.base_url}/chat/completions", json=body, headers=headers)
    except httpx.TimeoutException:
        raise LLMError(f"the model at {config.base_url} did not answer within {config.timeout:.0f} s") from None
    except httpx.HTTPError as exc:
        raise LLMError(f"cannot reach the model at {config.base_url}: {type(exc).__name__}") from None
    finally:
        if owned:
            client.close()
    return _answer(response, config, int((time.monotonic() - started) * 1000))


def _answer(response: httpx.Response, config: LLMConfig, duration_ms: int) -> ChatAnswer:
    if response.status_code >= 400:
        raise LLMError(f"the model at {config.base_url} answered HTTP {response.status_code}: {_error_text(response)}")
    try:
        doc = response.json()
        content = doc["choices"][0]["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise LLMError(f"the model at {config.base_url} sent a response that is not a chat completion") from None
    usage = doc.get("usage") or {}
    return ChatAnswer(content=content, model=doc.get("model"), prompt_tokens=usage.get("prompt_tokens") or 0,
                      completion_tokens=usage.get("completion_tokens") or 0, cost=usage.get("cost"),
                      duration_ms=duration_ms, raw=doc)


def _error_text(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
        return str(message)[:200] if message else response.reason_phrase
    except (ValueError, AttributeError):
        return response.reason_phrase


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
