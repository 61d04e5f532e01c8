"""Contracts of the governed search pipeline (docs/research.md): the run's budget,
the per-demand search policy, and what stages and gates report.

Budget and Policy validate themselves and fail with ONE line naming the
field (or environment variable / option), the bad value and the allowed
range: they are read from the environment and the command line, and a user
who typed a bad value should see what to fix, not a validation dump.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError, model_validator

from schemas.errors import UserError

# -- one-line errors from field constraints -------------------------------------------


def _range_text(model: type[BaseModel], name: str) -> str:
    """What a field accepts, in words, read from its own constraints."""
    info = model.model_fields[name]
    if info.annotation is bool:
        return "true or false"
    bounds = {type(m): m for m in info.metadata}
    low = bounds.get(Ge) or bounds.get(Gt)
    high = bounds.get(Le)
    low_value = getattr(low, "ge", None) if isinstance(low, Ge) else getattr(low, "gt", None)
    integer = info.annotation is int
    if integer and isinstance(low, Ge) and high is not None:
        return f"an integer from {low_value} to {high.le}"
    noun = "an integer" if integer else "a number"
    parts = [f"{'>=' if isinstance(low, Ge) else '>'} {low_value:g}"] if low is not None else []
    parts += [f"<= {high.le:g}"] if high is not None else []
    return f"{noun} {' and '.join(parts)}".strip()


_OUT_OF_RANGE = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def one_line(model: type[BaseModel], exc: ValidationError, values: Mapping[str, Any],
             labels: Mapping[str, str] | None = None, *, say_field: bool = True) -> str:
    """The first error of a validation, as one line naming what to fix:
    `--timeout=10 is out of range: timeout_seconds must be an integer >= 30`."""
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else ""
    if name not in model.model_fields:  # a rule across fields: its own words
        return str(error["msg"]).removeprefix("Value error, ")
    label = (labels or {}).get(name, name)
    value = values.get(name, error.get("input"))
    out_of_range = error["type"] in _OUT_OF_RANGE
    if out_of_range:
        value = _as_number(value)
    verdict = "is out of range" if out_of_range else (
        "is not an integer" if model.model_fields[name].annotation is int else "is not valid")
    subject = f"{name} must be" if say_field else "must be"
    return f"{label}={value!r} {verdict}: {subject} {_range_text(model, name)}"


def _as_number(value: Any) -> Any:
    """Text that was read as a number is shown as that number."""
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value.strip())
            except ValueError:
                continue
    return value


# -- budget -------------------------------------------------------------------


class BudgetError(UserError, ValueError):
    """A budget value out of range or not an integer (one line)."""


BudgetInt = Annotated[int, Strict()]  # 1.5 minutes or `true` is not a budget we can keep

# The environment variable of each budget field (read by the settings object).
BUDGET_VARIABLES: Mapping[str, str] = {
    "timeout_seconds": "PIPELINE_TIMEOUT",
    "max_target_count": "PIPELINE_MAX_TARGET_COUNT",
    "max_fallback_rounds": "PIPELINE_MAX_FALLBACK_ROUNDS",
}


class Budget(BaseModel):
    """Hard limits of one run: wall-clock time, how many sources it may
    select, how many fallback search rounds it may spend."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: BudgetInt = Field(1800, ge=30)
    max_target_count: BudgetInt = Field(10, ge=1, le=200)
    max_fallback_rounds: BudgetInt = Field(1, ge=0, le=5)

    def __init__(self, labels: Mapping[str, str] | None = None, **values: Any):
        """`labels` name each field as the user gave it (an option or a variable)."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise BudgetError(one_line(Budget, exc, values, labels)) from None

    @classmethod
    def resolve(cls, overrides: Mapping[str, Any] | None, environ: Mapping[str, str | None],
                option_names: Mapping[str, str] | None = None) -> "Budget":
        """Each field from `overrides[field]` when it is not None, else from
        its environment variable (`environ`, keyed by variable name) when set
        and not blank, else the default. Errors name the option the user
        typed (`option_names`, e.g. {"timeout_seconds": "--timeout"}) or the
        variable."""
        overrides = overrides or {}
        unknown = sorted(set(overrides) - set(BUDGET_VARIABLES))
        if unknown:
            raise BudgetError(f"unknown budget option {unknown[0]!r} (known: {', '.join(BUDGET_VARIABLES)})")
        values: dict[str, Any] = {}
        labels: dict[str, str] = {}
        for name, variable in BUDGET_VARIABLES.items():
            if overrides.get(name) is not None:
                value = overrides[name]
                values[name] = _integer_text(value) if isinstance(value, str) else value
                labels[name] = (option_names or {}).get(name, name)
            elif (environ.get(variable) or "").strip():
                values[name], labels[name] = _integer_text(environ[variable]), variable
        return cls(labels, **values)

    def cap_target(self, target: int) -> int:
        """The effective target: never above max_target_count, so a run cannot grow without bound."""
        return min(int(target), self.max_target_count)

    def to_dict(self) -> dict[str, int]:
        return self.model_dump()


def _integer_text(text: str) -> int | str:
    """Text as the integer it spells, else as typed."""
    stripped = text.strip()
    return int(stripped) if stripped.lstrip("+-").isdigit() else text


# -- policy -------------------------------------------------------------------


class PolicyError(UserError, ValueError):
    """A policy field unknown, or its value of the wrong type or range (one line)."""


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


PolicyInt = Annotated[int, BeforeValidator(_not_a_boolean)]
PolicyNumber = Annotated[float, BeforeValidator(_not_a_boolean)]


class Policy(BaseModel):
    """How one demand's search is judged (docs/research.md, "Policy").
    Values may be text as typed on a command line ("2.5", "false")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_keywords: PolicyInt = Field(6, ge=1, le=50)                   # keyword queries per search round
    min_candidate_multiplier: PolicyNumber = Field(2.0, ge=1, le=20)  # candidates >= target × this: enough
    near_enough_candidate_multiplier: PolicyNumber = Field(1.2, gt=0, le=20)  # ... enough, with a warning
    filter_near_ratio: PolicyNumber = Field(0.8, gt=0, le=1)          # selected >= target × this: enough, warned
    max_detail_fetch: PolicyInt = Field(30, ge=1, le=1000)            # candidates whose body is read and reviewed
    enable_llm_review: bool = True                                    # LLM relevance review when an LLM is set

    def __init__(self, **values: Any):
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise PolicyError(one_line(Policy, exc, values, say_field=False)) from None

    @model_validator(mode="after")
    def _warning_below_pass(self) -> "Policy":
        if self.near_enough_candidate_multiplier > self.min_candidate_multiplier:
            raise ValueError(
                f"near_enough_candidate_multiplier={self.near_enough_candidate_multiplier:g} is above "
                f"min_candidate_multiplier={self.min_candidate_multiplier:g}: the warning threshold must "
                "not exceed the pass threshold")
        return self

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: "Policy | None" = None) -> "Policy":
        """`base` (the built-in defaults when None) with the fields of `data`."""
        if not isinstance(data, Mapping):
            raise PolicyError(f"a policy must be a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - set(cls.model_fields))
        if unknown:
            raise PolicyError(f"unknown policy field {unknown[0]!r} (known: {', '.join(cls.model_fields)})")
        return cls(**{**(base or cls()).to_dict(), **data})

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


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
    """Who published the selected sources (the run's publishers stage).

    `publisher` is the URL's host without a leading "www." (see
    tasks.selection.filters.publisher_of), not the registrable domain: the registrable
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
