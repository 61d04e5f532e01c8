"""The scoring file (SEARCHLAKE_SCORING_FILE): what a user may change in the
freshness windows and authority scores, validated by field constraints."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

class WindowFile(BaseModel):
    """A freshness window: 1.0 up to `full_days`, falling to 0.0 at
    `zero_days`; or, with `since`, 1.0 from that date on."""

    model_config = ConfigDict(extra="forbid")

    full_days: float = Field(365.0, ge=0)
    zero_days: float = Field(730.0, ge=0)
    since: date | None = None


class ScoringFile(BaseModel):
    """{"domains": {"example.org": 0.9}, "windows": {"news": {"full_days": 180,
    "zero_days": 365}, "academic": {"since": "2018-01-01"}}, "default_authority": 0.4}"""

    model_config = ConfigDict(extra="forbid")

    domains: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    windows: dict[str, WindowFile] = Field(default_factory=dict)
    undated: float | None = Field(None, ge=0, le=1)
    institutional_authority: float | None = Field(None, ge=0, le=1)
    ip_authority: float | None = Field(None, ge=0, le=1)
    library_authority: float | None = Field(None, ge=0, le=1)
    default_authority: float | None = Field(None, ge=0, le=1)

    def changed_scores(self) -> dict[str, float]:
        """The scalar scores the file sets."""
        return {k: v for k, v in self.model_dump(exclude={"domains", "windows"}).items() if v is not None}
