"""Contracts of the governed search pipeline (spec 003): the run's budget,
the per-demand search policy, and what stages and gates report.

Budget and Policy validate themselves and fail with ONE line naming the
field (or environment variable / option), the bad value and the allowed
range: they are read from the environment and the command line, and a user
who typed a bad value should see what to fix, not a validation dump.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

# -- budget -------------------------------------------------------------------


class BudgetError(ValueError):
    """A budget value out of range or not an integer (one line)."""


@dataclass(frozen=True)
class _Limit:
    env: str
    default: int
    low: int
    high: int | None  # None: no upper bound

    def range_text(self) -> str:
        return f"an integer >= {self.low}" if self.high is None else f"an integer from {self.low} to {self.high}"


BUDGET_LIMITS: Mapping[str, _Limit] = {
    "timeout_seconds": _Limit("PIPELINE_TIMEOUT", 1800, 30, None),
    "max_target_count": _Limit("PIPELINE_MAX_TARGET_COUNT", 10, 1, 200),
    "max_fallback_rounds": _Limit("PIPELINE_MAX_FALLBACK_ROUNDS", 1, 0, 5),
}


@dataclass(frozen=True)
class Budget:
    """Hard limits of one run: wall-clock time, how many sources it may
    select, how many fallback search rounds it may spend."""

    timeout_seconds: int = 1800
    max_target_count: int = 10
    max_fallback_rounds: int = 1

    def __post_init__(self) -> None:
        for name, limit in BUDGET_LIMITS.items():
            _check_budget_value(name, getattr(self, name), limit, name)

    @classmethod
    def resolve(cls, overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None,
                option_names: Mapping[str, str] | None = None) -> "Budget":
        """Each field from `overrides[field]` when it is not None, else from
        its environment variable when set and not blank, else the default.
        `option_names` maps a field to the option the user typed (e.g.
        {"timeout_seconds": "--timeout"}) so that errors name it."""
        overrides = overrides or {}
        environ = os.environ if environ is None else environ
        unknown = sorted(set(overrides) - set(BUDGET_LIMITS))
        if unknown:
            raise BudgetError(f"unknown budget option {unknown[0]!r} (known: {', '.join(BUDGET_LIMITS)})")
        values = {}
        for name, limit in BUDGET_LIMITS.items():
            if overrides.get(name) is not None:
                label = (option_names or {}).get(name, name)
                values[name] = _check_budget_value(name, overrides[name], limit, label)
            elif (environ.get(limit.env) or "").strip():
                values[name] = _check_budget_value(name, environ[limit.env], limit, limit.env)
            else:
                values[name] = limit.default
        return cls(**values)

    def cap_target(self, target: int) -> int:
        """The effective target: never above max_target_count (spec 003 §2.2)."""
        return min(int(target), self.max_target_count)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def _check_budget_value(name: str, value: Any, limit: _Limit, label: str) -> int:
    number = _as_int(value)
    if number is None:
        raise BudgetError(f"{label}={value!r} is not an integer: {name} must be {limit.range_text()}")
    if number < limit.low or (limit.high is not None and number > limit.high):
        raise BudgetError(f"{label}={number} is out of range: {name} must be {limit.range_text()}")
    return number


def _as_int(value: Any) -> int | None:
    """An int from an int or integer text ("30", " 30 "); None otherwise.
    Booleans and floats are refused: 1.5 minutes is not a budget we can keep."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit():
            return int(text)
    return None


# -- policy -------------------------------------------------------------------


class PolicyError(ValueError):
    """A policy field unknown, or its value of the wrong type or range (one line)."""


@dataclass(frozen=True)
class _Rule:
    kind: type
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # low itself not allowed

    def text(self) -> str:
        if self.kind is bool:
            return "true or false"
        noun = "an integer" if self.kind is int else "a number"
        low = f"> {self.low:g}" if self.low_open else f">= {self.low:g}"
        return f"{noun} {low} and <= {self.high:g}"


POLICY_RULES: Mapping[str, _Rule] = {
    "max_keywords": _Rule(int, 1, 50),
    "min_candidate_multiplier": _Rule(float, 1.0, 20.0),
    "near_enough_candidate_multiplier": _Rule(float, 0.0, 20.0, low_open=True),
    "filter_near_ratio": _Rule(float, 0.0, 1.0, low_open=True),
    "max_detail_fetch": _Rule(int, 1, 1000),
    "enable_llm_review": _Rule(bool),
}
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


@dataclass(frozen=True)
class Policy:
    """How one demand's search is judged (spec 003 §2.1, SearchAgentPolicy)."""

    max_keywords: int = 6                            # keyword queries per search round
    min_candidate_multiplier: float = 2.0            # candidates >= target × this: enough
    near_enough_candidate_multiplier: float = 1.2    # candidates >= target × this: enough, with a warning
    filter_near_ratio: float = 0.8                   # selected >= target × this: enough, with a warning
    max_detail_fetch: int = 30                       # candidates whose body is read and reviewed
    enable_llm_review: bool = True                   # LLM relevance review when an LLM is configured

    def __post_init__(self) -> None:
        for name, rule in POLICY_RULES.items():
            object.__setattr__(self, name, _coerce(name, getattr(self, name), rule))
        if self.near_enough_candidate_multiplier > self.min_candidate_multiplier:
            raise PolicyError(
                f"near_enough_candidate_multiplier={self.near_enough_candidate_multiplier:g} is above "
                f"min_candidate_multiplier={self.min_candidate_multiplier:g}: the warning threshold must "
                "not exceed the pass threshold")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: "Policy | None" = None) -> "Policy":
        """`base` (the built-in defaults when None) with the fields of `data`;
        values may be text as typed on a command line ("2.5", "false")."""
        if not isinstance(data, Mapping):
            raise PolicyError(f"a policy must be a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - set(POLICY_RULES))
        if unknown:
            raise PolicyError(f"unknown policy field {unknown[0]!r} (known: {', '.join(POLICY_RULES)})")
        merged = {**(base or cls()).to_dict(), **data}
        return cls(**merged)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _coerce(name: str, value: Any, rule: _Rule) -> Any:
    if rule.kind is bool:
        return _coerce_bool(name, value, rule)
    number = _number(value, integer=rule.kind is int)
    if number is None:
        raise PolicyError(f"{name}={value!r} is not valid: must be {rule.text()}")
    too_low = number <= rule.low if rule.low_open else number < rule.low
    if too_low or number > rule.high:
        raise PolicyError(f"{name}={number:g} is out of range: must be {rule.text()}")
    return number


def _coerce_bool(name: str, value: Any, rule: _Rule) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise PolicyError(f"{name}={value!r} is not valid: must be {rule.text()}")


def _number(value: Any, *, integer: bool) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip()) if not integer else int(value.strip())
        except ValueError:
            return None
    if isinstance(value, float) and integer:
        # JSON writers may store 30 as 30.0; anything fractional is an error.
        return int(value) if value.is_integer() else None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return int(value) if integer else float(value)
    return None


# -- what stages and gates report -----------------------------------------------

GateOutcome = Literal["pass", "warn", "fallback", "abort"]
GATE_OUTCOMES = ("pass", "warn", "fallback", "abort")


@dataclass(frozen=True)
class GateResult:
    """A gate's verdict: pass and warn go on, fallback re-runs the search
    with new keywords, abort ends the run as failed."""

    gate: str
    outcome: GateOutcome
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in GATE_OUTCOMES:
            raise ValueError(f"gate outcome {self.outcome!r} is not one of {', '.join(GATE_OUTCOMES)}")

    @property
    def proceeds(self) -> bool:
        return self.outcome in ("pass", "warn")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Drop:
    """A candidate a stage removed, and why, in words a reader understands."""

    source_id: str | None
    url: str | None
    title: str | None
    stage: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


LOCAL_LIBRARY = "local library"


@dataclass
class Publisher:
    """Who published the selected sources (spec 003 Stage 6, accounts).

    `publisher` is the URL's host without a leading "www." (see
    tasks.governance.filters.publisher_of), not the registrable domain: the registrable
    domain needs the public-suffix list, and the host is the better unit
    anyway: docs.python.org and peps.python.org, or two github.io sites,
    are different outlets. `file:` URLs are all "local library"."""

    publisher: str
    article_count: int = 0
    sample_titles: list[str] = field(default_factory=list)  # at most MAX_SAMPLE_TITLES
    source_urls: list[str] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)

    MAX_SAMPLE_TITLES = 5

    def to_dict(self) -> dict[str, Any]:
        return {"publisher": self.publisher, "article_count": self.article_count,
                "sample_titles": list(self.sample_titles), "source_urls": list(self.source_urls),
                "source_ids": list(self.source_ids)}


@dataclass(frozen=True)
class StageRecord:
    """One attempt of one stage, for the run's stage history."""

    name: str
    status: str  # complete | failed | skipped
    attempt: int = 1
    started_at: str | None = None  # ISO 8601, UTC
    seconds: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
