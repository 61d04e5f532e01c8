"""One research request, however it is started: the command line, the web
page, `searchlake research` handing its run to a `searchlake serve`, the
Prefect deployment, and each question of a batch. It is built and validated
here once; what only the running machine can judge (the library folder, the
provider names and their keys, the budget against PIPELINE_* variables) is
checked by flows/research_checks.py before a run starts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from schemas.bundle import Identifier
from schemas.errors import UserError

MAX_QUESTION = 2000  # characters: a question, not a document


class RequestError(UserError, ValueError):
    """A research request with a bad value (one line naming it)."""


class BudgetRequest(BaseModel):
    """The run's budget as asked for; each unset field is taken from its
    PIPELINE_* variable, or the default, when the run is checked
    (schemas.governance.Budget holds the resolved, range-checked values)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    # `timeout` is what `searchlake research` sent before the name was one
    timeout_seconds: int | None = Field(default=None, validation_alias=AliasChoices("timeout_seconds", "timeout"))
    max_target_count: int | None = None
    max_fallback_rounds: int | None = None

    def overrides(self) -> dict[str, int]:
        return self.model_dump(exclude_none=True)


class ResearchRequest(BaseModel):
    """What to research and how: the parameters of the research flow."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str
    task_id: Identifier | None = None
    library: str | None = None
    providers: list[str] | None = None
    max_results: int | None = None
    target: int | None = None
    demand_id: str = "default"
    budget: BudgetRequest = BudgetRequest()

    @field_validator("question")
    @classmethod
    def _a_question(cls, question: str) -> str:
        if not question.strip():
            raise ValueError("is empty")
        if len(question) > MAX_QUESTION:
            raise ValueError(f"has {len(question)} characters, more than {MAX_QUESTION}")
        return question

    @field_validator("target")
    @classmethod
    def _a_target(cls, target: int | None) -> int | None:
        if target is not None and target < 1:
            raise ValueError(f"must be at least 1, not {target}")
        return target

    @field_validator("max_results")
    @classmethod
    def _a_depth(cls, max_results: int | None) -> int | None:
        if max_results is not None and not 1 <= max_results <= 50:
            raise ValueError(f"must be between 1 and 50, not {max_results}")
        return max_results

    @field_validator("demand_id")
    @classmethod
    def _a_demand(cls, demand_id: str) -> str:
        if not demand_id.strip():
            raise ValueError("is empty")
        return demand_id

    @classmethod
    def build(cls, labels: Mapping[str, str] | None = None, **values: Any) -> "ResearchRequest":
        """The request, or RequestError naming the first bad value as the user
        gave it (`labels`: the option or column of each field, e.g. --target)."""
        try:
            return cls(**values)
        except ValidationError as exc:
            raise RequestError(request_error(exc, labels)) from None

    def flow_parameters(self) -> dict[str, Any]:
        """The research flow's parameters (JSON: a deployment run carries them)."""
        return {**self.model_dump(exclude={"budget"}), "budget": self.budget.overrides() or None}


_LABELS = {"question": "the question"}


def request_error(exc: ValidationError, labels: Mapping[str, str] | None = None) -> str:
    """The first problem of a request, in one line."""
    error = exc.errors()[0]
    if error["type"] == "json_invalid":
        return "the body is not valid JSON: " + str(error["msg"]).removeprefix("Invalid JSON: ")
    if not error["loc"] and error["type"] == "model_type":
        return "the body must be a JSON object"
    where = ".".join(map(str, error["loc"]))
    label = (labels or {}).get(where) or _LABELS.get(where, where)
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "value_error" and not message.startswith("invalid"):
        return f"{label} {message}"  # our own words: "--target must be at least 1, not 0"
    return f"{label}: {message}"
