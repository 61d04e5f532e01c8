"""What `searchlake research` sends a running `searchlake serve` to hand its
run over (POST /api/research). The server validates the body against this
model and nothing else: a field it does not know is refused, not ignored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas.bundle import Identifier


class BudgetRequest(BaseModel):
    """The budget options as typed; the server resolves them as the command would."""

    model_config = ConfigDict(extra="forbid")

    timeout: int | None = None
    max_target_count: int | None = None
    max_fallback_rounds: int | None = None


class ResearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    # the server runs the request only with the same settings as the command (tasks/progress/handoff.py)
    fingerprint: str
    task_id: Identifier | None = None
    library: str | None = None
    providers: list[str] | None = None
    max_results: int | None = Field(default=None, ge=1, le=50)
    target: int | None = None
    demand_id: str = Field(default="default", min_length=1)
    budget: BudgetRequest | None = None


def request_error(exc: ValidationError) -> str:
    """The first problem of a request body, in one line."""
    error = exc.errors()[0]
    if error["type"] == "json_invalid":
        return "the body is not valid JSON: " + str(error["msg"]).removeprefix("Invalid JSON: ")
    if not error["loc"] and error["type"] == "model_type":
        return "the body must be a JSON object"
    where = ".".join(map(str, error["loc"]))
    return f"{where}: {str(error['msg']).removeprefix('Value error, ')}"


def is_malformed(exc: ValidationError) -> bool:
    """The body could not be read as JSON at all (rather than read, and found wrong)."""
    return exc.errors()[0]["type"] == "json_invalid"
