"""What one run spends on the model, and whether the model is still worth
calling in it.

A run (a research run, a `report --rebuild`) holds one ModelUse, handed to
each of its stages inside its LLMConfig (tasks/common/llm.py); `chat` asks it
before every call and tells it how the call ended. It keeps

- the run's model budget: seconds spent in model calls and tokens (as the
  endpoint counts them); a call may take no longer than what is left;
- the breaker: after `max_failures` calls that timed out or failed, or
  `max_unusable` answers that could not be used, the model is not called
  again in the run, and every later stage takes its own fallback at once
  (a model server that answers one request at a time is still busy with
  the answer the client gave up on: every later call would queue behind it
  and time out too);
- whether the endpoint takes `response_format` (a refusal is remembered).

A ModelUse belongs to one run: runs in the same `searchlake serve` process
never share one, so one run's failures never stop another's model.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

# The kinds of model call, and the stage each is part of as a reader names it.
STAGE_OF_CALL = {"plan": "planning", "screen": "screening", "review": "review", "synthesis": "synthesis",
                 "model": "modeling"}
# What the model was doing when a call of that kind went wrong.
DOING = {"plan": "planning", "screen": "screening titles", "review": "reviewing sources",
         "synthesis": "writing the synthesis", "model": "modeling"}
MIN_CALL_SECONDS = 1.0  # less model time than this left: the budget is spent
# How a call asks for JSON of a schema: OpenAI's json_schema (Ollama, llama.cpp's
# llama-server, vLLM), then json_object with the schema beside it (llama-cpp-python's server).
SCHEMA_FORMS = ("json_schema", "json_object")


@dataclass(frozen=True)
class ModelLimits:
    """A run's model budget and how soon it gives up on the model."""

    seconds: float = 600.0
    tokens: int = 200_000
    max_failures: int = 1
    max_unusable: int = 2


class ModelUse:
    def __init__(self, where: str, model: str, limits: ModelLimits = ModelLimits()):
        self.where, self.model, self.limits = where, model, limits
        self._lock = threading.Lock()  # stages may call from worker threads
        self.calls = self.failures = self.unusable_answers = 0
        self.seconds = 0.0
        self.prompt_tokens = self.completion_tokens = 0
        # the forms of response_format the endpoint has not refused, the one to ask with first
        self.schema_forms: list[str] = list(SCHEMA_FORMS)
        self.stopped: str | None = None  # why the model is not called again, once it is not
        self.notes: list[str] = []
        # per kind of call, its answers: taken as written, repaired first, or unusable
        self.answers: dict[str, dict[str, int]] = {}
        self._without: list[str] = []  # stages that ran without the model, in order

    # -- before a call
    def refusal(self, kind: str) -> str | None:
        """Why a call of `kind` is not to be made (the stage then runs
        without the model), or None when it may go."""
        with self._lock:
            if self.stopped is None:
                self.stopped = self._spent_budget(kind)
            if self.stopped is None:
                return None
            self._ran_without(kind)
            return f"the model is not called again in this run: {self.stopped}"

    def time_for(self, timeout: float) -> float:
        """The most seconds the next call may take: its timeout, or less when the run's budget has less left."""
        with self._lock:
            return max(MIN_CALL_SECONDS, min(timeout, self.limits.seconds - self.seconds))

    def tokens_for(self, max_tokens: int) -> int:
        """The most tokens the next answer may have: `max_tokens`, or what is left of the run's tokens."""
        with self._lock:
            return max(1, min(max_tokens, self.limits.tokens - self.tokens))

    # -- after a call
    def answered(self, kind: str, seconds: float, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self._spend(seconds)
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    def failed(self, kind: str, seconds: float, what: str, detail: str | None = None) -> None:
        """A call that brought no answer (timed out, unreachable, an HTTP
        error): `what` names the endpoint and what happened, `detail` is the
        server's or the network's own words."""
        with self._lock:
            self._spend(seconds)
            self.failures += 1
            self._ran_without(kind)
            if self.stopped is None and self.failures >= self.limits.max_failures:
                self.stopped = f"{what} while {DOING.get(kind, kind)}" + (f" ({detail})" if detail else "")

    def taken(self, kind: str, repaired: bool) -> None:
        """An answer the stage used, as written or once its JSON was repaired."""
        with self._lock:
            self._count_answer(kind, "repaired" if repaired else "as_written")

    def unusable(self, kind: str, reason: str) -> None:
        """An answer the stage could not use (`reason`: what was wrong)."""
        with self._lock:
            self._count_answer(kind, "unusable")
            self.unusable_answers += 1
            self._ran_without(kind)
            if self.stopped is None and self.unusable_answers >= self.limits.max_unusable:
                answers = "an unusable answer" if self.unusable_answers == 1 else \
                    f"{self.unusable_answers} unusable answers"
                self.stopped = (f"the model at {self.where} gave {answers}, the last while "
                                f"{DOING.get(kind, kind)} ({reason})")

    @property
    def structured(self) -> bool:
        """Whether calls still ask for their schema by response_format."""
        return bool(self.schema_forms)

    def schema_refused(self, form: str, reason: str) -> None:
        """The endpoint refused response_format of `form`: the rest of the
        run asks with the next form, or without a schema once none is left."""
        with self._lock:
            if form in self.schema_forms:
                self.schema_forms.remove(form)
                then = (f"ask with response_format {self.schema_forms[0]}" if self.schema_forms
                        else "ask for JSON without a schema")
                self.notes.append(f"the model at {self.where} refused response_format {form} ({reason}); the "
                                  f"run's further calls {then}")

    # -- what the run says of it
    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def without_model(self) -> str | None:
        """Once the model was given up on: why, and which stages ran without
        it ("the model at … did not answer within 20 s while planning;
        planning, screening, review and synthesis ran without it"); None
        while it is still called."""
        with self._lock:
            if self.stopped is None:
                return None
            return f"{self.stopped}; {spoken_list(self._without)} ran without it"

    def record(self) -> dict:
        """What the run spent on the model and what became of it, as its
        record keeps it (the `model` output of the `runs` row)."""
        without = self.without_model()
        with self._lock:
            return {"endpoint": self.where, "model": self.model, "calls": self.calls,
                    "seconds": round(self.seconds, 1), "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "budget": {"seconds": self.limits.seconds, "tokens": self.limits.tokens},
                    "structured_output": self.schema_forms[0] if self.schema_forms else False,
                    "answers": {kind: dict(counts) for kind, counts in self.answers.items()},
                    "without_model": without, "notes": list(self.notes)}

    # -- inside the lock
    def _count_answer(self, kind: str, how: str) -> None:
        counts = self.answers.setdefault(kind, {})
        counts[how] = counts.get(how, 0) + 1

    def _spend(self, seconds: float) -> None:
        self.calls += 1
        self.seconds += seconds

    def _ran_without(self, kind: str) -> None:
        stage = STAGE_OF_CALL.get(kind, kind)
        if stage not in self._without:
            self._without.append(stage)

    def _spent_budget(self, kind: str) -> str | None:
        doing = DOING.get(kind, kind)
        if self.limits.seconds - self.seconds < MIN_CALL_SECONDS:
            return f"the run's model time ({self.limits.seconds:g} s) was spent before {doing}"
        if self.tokens >= self.limits.tokens:
            return f"the run's model tokens ({self.limits.tokens}) were spent before {doing}"
        return None


def spoken_list(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return " and ".join(filter(None, [", ".join(items[:-1]), *items[-1:]]))


def spending(record: dict) -> str:
    """A run's `model` record in a line: "3 calls, 12.4 s, 2140 tokens (budget 600 s, 200000 tokens)"."""
    calls = record.get("calls", 0)
    tokens = (record.get("prompt_tokens") or 0) + (record.get("completion_tokens") or 0)
    budget = record.get("budget") or {}
    line = (f"{calls} call{'' if calls == 1 else 's'} to {record.get('model')} at {record.get('endpoint')}, "
            f"{record.get('seconds', 0):g} s, {tokens} tokens")
    if budget:
        line += f" (budget {budget.get('seconds', 0):g} s, {budget.get('tokens')} tokens)"
    return line
