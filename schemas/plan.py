"""The research plan: what the question means and which queries answer it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

Intent = Literal["academic", "news", "web", "library"]


class SearchSummary(BaseModel):
    interpreted_topic: str
    key_dimensions: list[str] = Field(default_factory=list)


class PlannedQuery(BaseModel):
    intent: Intent
    text: str = Field(min_length=1, max_length=400)

    @field_validator("text")
    @classmethod
    def _squeeze_spaces(cls, value: str) -> str:
        return " ".join(value.split())


class ResearchPlan(BaseModel):
    question: str
    search_summary: SearchSummary
    queries: list[PlannedQuery]
    planner: Literal["llm", "keywords"]
    fallback_reason: str | None = None
