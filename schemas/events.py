"""Progress events: one JSON object per SSE `data:` line (docs/web.md, "Progress events").

Wire names are camelCase (`stepId`, `stepType`) because front ends already
read that shape; Python code uses snake_case through the aliases.
`stepId` is the legacy UI alias of a step, `stepType` the real pipeline step.
The whole run is itself a step, `stepType == "pipeline"`: its `complete` or
`error` event is the last line of a run, which is how a follower knows to stop.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PIPELINE = "pipeline"
StepStatus = Literal["start", "progress", "complete", "error"]
TERMINAL_STATUSES = frozenset({"complete", "error"})


def _now() -> datetime:
    return datetime.now(timezone.utc)


class EventPayload(BaseModel):
    model_config = ConfigDict(extra="allow")

    chunk: str | None = None
    result: Any = None
    metadata: dict[str, Any] | None = None
    error: str | dict[str, Any] | None = None


class ProgressEvent(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    step_id: str = Field(alias="stepId", min_length=1)
    step_type: str = Field(alias="stepType", min_length=1)
    status: StepStatus
    progress: float = Field(ge=0.0, le=1.0)
    label: str = ""
    payload: EventPayload = Field(default_factory=EventPayload)
    # beyond the event shape front ends read; additive, so followers can order and audit lines
    ts: datetime = Field(default_factory=_now)

    @model_validator(mode="after")
    def _error_events_carry_the_error_and_no_result(self) -> "ProgressEvent":
        if self.status == "error":
            if not self.payload.error:
                raise ValueError("an error event needs payload.error")
            if self.payload.result is not None:
                raise ValueError("an error event has payload.result = null")
        return self

    @property
    def is_terminal(self) -> bool:
        """The run's last event: the pipeline completed or failed."""
        return self.step_type == PIPELINE and self.status in TERMINAL_STATUSES

    def to_wire(self) -> dict[str, Any]:
        """The event as front ends read it: absent payload parts are left out,
        except that an error event says `result: null` explicitly, so a reader
        can tell a failed step from one that has not reported yet."""
        doc = self.model_dump(mode="json", by_alias=True, exclude={"payload"})
        payload = self.payload.model_dump(mode="json", exclude_none=True)
        if self.status == "error":
            payload["result"] = None
        doc["payload"] = payload
        return doc
