"""The one client for OpenAI-compatible chat endpoints (OpenRouter, DashScope's
compatible mode, Ollama, llama.cpp, vLLM): post_completion, used by chat() here and by
the ask stage (tasks/ask/openrouter.py, with its own answer checks); and the ---THOUGHT--- / ---JSON--- answer
format: the model thinks briefly, then writes one JSON document and an end
mark, which is parsed and repaired for what models commonly break (code
fences, comments, trailing or missing commas, prose around it).

Every call is bounded: a kind (plan, screen, review, synthesis, model) with
its own max_tokens, a stop sequence at the format's end mark, one timeout
for the whole answer (never tried again after it), and the run's ModelUse
(tasks/common/model_use.py: budget, breaker). A call that expects JSON sends
`response_format` with a strict JSON schema of the pydantic model its
caller reads the answer as; an endpoint that refuses it is asked again
without, and the run remembers."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, TypeVar

import httpx
import json_repair
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from schemas.errors import InternalError, RemoteError
from tasks.common.http import (Attempt, CallPolicy, Outbound, call, endpoint_url, error_detail, json_body,
                               make_client, require_success, safe_url, scrub, status_error)
from tasks.common.model_use import SCHEMA_FORMS, ModelLimits, ModelUse
from tasks.common.settings import Settings, secret_value

THOUGHT_MARK = "---THOUGHT---"
JSON_MARK = "---JSON---"
END_MARK = "---END---"
FORMAT_INSTRUCTIONS = (
    f"Answer in two parts. First a line {THOUGHT_MARK} followed by your reasoning in a few sentences. "
    f"Then a line {JSON_MARK} followed by exactly one JSON object, then a line {END_MARK} and nothing after it."
)
# The end mark on a line of its own ends the answer at the server: a model
# that goes on after its JSON costs no more time. (Not the bare mark: a
# thought may quote the instructions.)
STOP = ["\n" + END_MARK]
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
# What a server that cannot do structured output says when refusing it
_SCHEMA_WORDS = re.compile(r"response_format|json_schema", re.IGNORECASE)

# The kinds of call (tasks/common/model_use.py names their stages)
PLAN, SCREEN, REVIEW, SYNTHESIS, MODEL = "plan", "screen", "review", "synthesis", "model"
T = TypeVar("T")


class LLMError(InternalError):
    """The model could not be reached or its answer could not be used."""


class AnswerShape(BaseModel):
    """The JSON a kind of call asks for, closed as strict structured output
    is: its `response_format` schema, and what a conforming answer is
    validated as. Subclasses have comments rather than docstrings: a
    docstring would reach the model as the schema's description."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# Bounds an answer's schema sets (maxLength, maxItems): a server that turns the
# schema into a grammar then ends every answer within them, even a small
# model's that would repeat an item until its max_tokens. A larger answer
# read without the schema is still taken (parse_json_answer).
def capped_str(most: int) -> Any:
    """A string of at most `most` characters."""
    return Annotated[str, StringConstraints(max_length=most)]


def capped_list(kind: Any, most: int) -> Any:
    """A list of at most `most` items of `kind`."""
    return Annotated[list[kind], Field(max_length=most)]


class ModelSkipped(LLMError):
    """The run no longer calls the model (its breaker is open or its model
    budget spent); no request was made."""


@dataclass(frozen=True)
class AnswerTokens:
    """The most tokens the model may write per kind of call (max_tokens):
    room for a short thought and the JSON each prompt asks for."""

    plan: int = 1024       # a topic, up to 6 dimensions, 4 lists of a few short queries
    screen: int = 512      # {"irrelevant": [numbers]} for 20 titles
    review: int = 1024     # 10 verdicts with a short reason each
    synthesis: int = 4096  # an answer, insights and figures, each with quotes copied whole
    model: int = 2048      # drivers, relationships, scenarios, metrics


@dataclass
class ChatAnswer:
    content: str
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    duration_ms: int = 0
    raw: dict = field(default_factory=dict)
    kind: str | None = None
    shape: type[BaseModel] | None = field(default=None, repr=False)
    use: ModelUse | None = field(default=None, repr=False)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def read(self, take: Callable[[dict[str, Any]], T]) -> T:
        """`take` of the answer's JSON object (parse_json_answer, against the
        call's shape). An answer the caller cannot take (LLMError or
        ValueError, raised) counts as unusable in the run."""
        try:
            value, repaired = parse_json_answer(self.content, self.shape)
            taken = take(value)
        except (LLMError, ValueError) as exc:
            if self.use is not None and self.kind is not None:
                self.use.unusable(self.kind, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            raise
        if self.use is not None and self.kind is not None:
            self.use.taken(self.kind, repaired)
        return taken


@dataclass(frozen=True)
class LLMConfig:
    """An endpoint and how it is called. `timeout` bounds a whole call, its
    answer included. `use`: the run's ModelUse (budget, breaker); without
    one every call is bounded on its own."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    temperature: float = 0.2
    retries: int = 0
    # every configured secret: a server that echoes the request must not get one stored
    secrets: tuple[str, ...] = field(default=(), repr=False)
    answer_tokens: AnswerTokens = AnswerTokens()
    structured_output: bool = True
    use: ModelUse | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> "LLMConfig | None":
        """The configured endpoint with a ModelUse of its own: one per run
        (or command), handed to each of its stages."""
        if not (settings.llm_base_url and settings.llm_model):
            return None
        base_url = settings.llm_base_url.rstrip("/")
        limits = ModelLimits(seconds=settings.llm_run_seconds, tokens=settings.llm_run_tokens,
                             max_failures=settings.llm_max_failures, max_unusable=settings.llm_max_unusable)
        tokens = AnswerTokens(plan=settings.llm_max_tokens_plan, screen=settings.llm_max_tokens_screen,
                              review=settings.llm_max_tokens_review, synthesis=settings.llm_max_tokens_synthesis,
                              model=settings.llm_max_tokens_model)
        return cls(base_url, settings.llm_model, secret_value(settings.llm_api_key), timeout=settings.llm_timeout,
                   retries=settings.http_retries, secrets=settings.secret_values(), answer_tokens=tokens,
                   structured_output=settings.llm_structured_output,
                   use=ModelUse(safe_url(base_url), settings.llm_model, limits))

    @property
    def where(self) -> str:
        """The endpoint as messages may name it: no credentials, no query."""
        return safe_url(self.base_url)


def chat(config: LLMConfig, messages: list[dict], *, kind: str, shape: type[BaseModel] | None = None,
         client: httpx.Client | None = None, extra: dict | None = None) -> ChatAnswer:
    """One chat completion of `kind` through the shared HTTP path, its
    answer bounded (max_tokens of the kind, the stop sequence, the timeout
    and what the run has left); with `shape`, the JSON it expects asked for
    by `response_format`. Errors become LLMError (ModelSkipped, with no
    request made, once the run has given up on the model), and neither they
    nor the answer carry a configured secret."""
    use = config.use
    if use is not None and (refused := use.refusal(kind)):
        raise ModelSkipped(refused)
    timeout = use.time_for(config.timeout) if use is not None else config.timeout
    body = completion_body(config, messages, kind, shape if wants_schema(config, shape) else None, extra)
    owned = client is None
    client = client or make_client(timeout=timeout)
    started = time.monotonic()
    try:
        doc = _complete(client, config, body, timeout)
    except RemoteError as exc:
        what, detail = _failure(config, exc, timeout)
        if use is not None:
            use.failed(kind, time.monotonic() - started, what, detail)
        raise LLMError(f"{what}: {detail}" if detail else what) from None
    finally:
        if owned:
            client.close()
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    answer = ChatAnswer(content=choice_message(doc).get("content") or "", model=doc.get("model"),
                        prompt_tokens=usage.get("prompt_tokens") or 0,
                        completion_tokens=usage.get("completion_tokens") or 0, cost=usage.get("cost"),
                        duration_ms=int((time.monotonic() - started) * 1000), raw=doc, kind=kind, shape=shape,
                        use=use)
    if use is not None:
        use.answered(kind, answer.duration_ms / 1000, answer.prompt_tokens, answer.completion_tokens)
    return answer


def model_given_up(config: LLMConfig | None) -> bool:
    """Whether the run of `config` no longer calls its model (see ModelUse.without_model)."""
    return config is not None and config.use is not None and config.use.stopped is not None


def wants_schema(config: LLMConfig, shape: type[BaseModel] | None) -> bool:
    """Whether a call expecting `shape` asks for it by response_format: when
    configured so, and the run's endpoint has not refused it."""
    return shape is not None and config.structured_output and (config.use is None or config.use.structured)


def completion_body(config: LLMConfig, messages: list[dict], kind: str, shape: type[BaseModel] | None,
                    extra: dict | None = None) -> dict:
    """The request of one call: the kind's max_tokens (no more than the run
    has left), the stop sequence, and `response_format` for `shape`."""
    max_tokens = getattr(config.answer_tokens, kind)
    if config.use is not None:
        max_tokens = config.use.tokens_for(max_tokens)
    body = {"model": config.model, "messages": messages, "temperature": config.temperature,
            "max_tokens": max_tokens, "stop": STOP}
    if shape is not None:
        body["response_format"] = response_format(kind, shape, schema_forms(config)[0])
    return {**body, **(extra or {})}


def schema_forms(config: LLMConfig) -> list[str]:
    """The forms of response_format still to try, the first to ask with."""
    return list(config.use.schema_forms) if config.use is not None else list(SCHEMA_FORMS)


def _complete(client: httpx.Client, config: LLMConfig, body: dict, timeout: float) -> dict:
    """The completion document; an endpoint that refuses `response_format`
    (an HTTP error naming it) is asked again at once with the next form of
    it, then without one, in the time left, and the run remembers."""
    started = time.monotonic()
    forms = schema_forms(config)
    while True:
        try:
            return _post(client, config, body, max(1.0, timeout - (time.monotonic() - started)))
        except RemoteError as exc:
            if "response_format" not in body or not refuses_schema(exc):
                raise
            asked = body["response_format"]
            if config.use is not None:
                config.use.schema_refused(asked["type"], exc.reason)
            forms = [f for f in forms if f != asked["type"]]
            body = {key: value for key, value in body.items() if key != "response_format"}
            if forms:
                body["response_format"] = schema_format(*schema_of(asked), forms[0])


def _post(client: httpx.Client, config: LLMConfig, body: dict, timeout: float) -> dict:
    # `within`: the whole call, body included, ends in time; a timed-out try
    # is not repeated (the server may still be generating what was asked).
    policy = CallPolicy(retries=config.retries, timeout=timeout, within=timeout, retry_timeouts=False,
                        secrets=config.secrets)
    return post_completion(client, endpoint_url(config.base_url, "chat/completions"), body, key=config.api_key,
                           policy=policy, read=read_model_completion)


def read_model_completion(response: httpx.Response) -> dict:
    """read_completion, where an error naming response_format is a refusal
    of the form asked, never retried (asking the same again cannot cure it),
    even from a server that answers it with a 500."""
    if not response.is_success and _SCHEMA_WORDS.search(error_detail(response)):
        raise status_error(response, retryable=False)
    return read_completion(response)


def refuses_schema(exc: RemoteError) -> bool:
    """An endpoint's refusal of structured output: an HTTP error naming
    response_format or json_schema (llama-cpp-python's server answers 500
    for a form it does not know, others 400 or 422)."""
    return exc.http_status is not None and exc.http_status >= 400 and bool(_SCHEMA_WORDS.search(exc.reason))


def response_format(name: str, shape: type[BaseModel], form: str = "json_schema") -> dict:
    """Structured output for answers of `shape`, in `form` (model_use.SCHEMA_FORMS)."""
    return schema_format(name, strict_schema(shape), form)


def schema_format(name: str, schema: dict, form: str) -> dict:
    """json_schema: OpenAI's, as Ollama, llama.cpp's llama-server and vLLM take
    it; json_object: the schema beside the type, as llama-cpp-python's server
    takes it."""
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def schema_of(fmt: dict) -> tuple[str, dict]:
    """The name and schema a response_format asks for, in either form."""
    if fmt["type"] == "json_schema":
        return fmt["json_schema"]["name"], fmt["json_schema"]["schema"]
    return "answer", fmt["schema"]


def strict_schema(shape: type[BaseModel]) -> dict:
    """The JSON schema of `shape` as strict structured output takes it:
    every object closed (additionalProperties false) and requiring all its
    properties, definitions written in place (servers that turn a schema
    into a grammar follow $ref more or less far)."""
    schema = shape.model_json_schema()
    definitions = schema.pop("$defs", {})

    def strict(node: Any) -> Any:
        if isinstance(node, list):
            return [strict(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return strict(definitions[node["$ref"].rsplit("/", 1)[-1]])
        out = {key: strict(value) for key, value in node.items()}
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
            out["required"] = list(out["properties"])
        return out

    return strict(schema)


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


def _failure(config: LLMConfig, exc: RemoteError, timeout: float) -> tuple[str, str | None]:
    """What became of a call, and the network's or the server's own words when there are any."""
    if exc.code == "timeout":
        return f"the model at {config.where} did not answer within {round(timeout, 1):g} s", None
    if exc.code == "network":
        return f"cannot reach the model at {config.where}", exc.reason
    if exc.code == "bad_response":
        return f"the model at {config.where} sent a response that is not a chat completion", None
    return f"the model at {config.where} answered with an error", exc.reason


def split_thought_json(text: str) -> tuple[str, str]:
    """The thought and the JSON part of an answer (the whole answer when the
    model forgot the marks)."""
    if JSON_MARK in text:
        before, _, after = text.rpartition(JSON_MARK)
        return before.replace(THOUGHT_MARK, "").strip(), after.strip()
    return "", text.strip()


def parse_json_answer(text: str, shape: type[BaseModel] | None = None) -> tuple[dict[str, Any], bool]:
    """The JSON object of a THOUGHT/JSON answer, and whether it had to be
    repaired: as validated by `shape` when it fits it as written (structured
    output), otherwise parsed or repaired (the caller's own checks then
    judge it); LLMError if there is none."""
    _, part = split_thought_json(text)
    part = part.removesuffix(END_MARK).strip()
    if shape is not None:
        try:
            return shape.model_validate_json(part).model_dump(mode="json", by_alias=True), False
        except ValidationError:
            pass
    fenced = _FENCE.search(part)
    if fenced:
        part = fenced.group(1)
    start = part.find("{")
    if start < 0:
        raise LLMError("the answer contains no JSON object")
    repaired = False
    try:
        value = json.loads(part[start:part.rfind("}") + 1])
    except ValueError:
        value, repaired = json_repair.repair_json(part[start:], return_objects=True), True
    if not isinstance(value, dict) or not value:
        raise LLMError("the answer's JSON part is not a usable object")
    return value, repaired
