"""The retrieval protocol: SearchResultBundle, SearchResultItem,
SearchResultStats and SearchReadCursor."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeInt,
    model_validator,
)

from schemas.urls import check_lake_url, source_id_for

_IDENTIFIER = re.compile(r"\w[\w.\-]{0,127}")


def check_identifier(value: str) -> str:
    """task_id and query_id become path parts: letters, digits, '_', '.', '-'
    only, starting with a letter, digit or '_', at most 128 characters."""
    if not _IDENTIFIER.fullmatch(value):
        raise ValueError(
            "must be 1-128 letters, digits, '_', '.' or '-', starting with a letter, digit or '_'"
        )
    return value


def _require_iso_text(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError("must be an ISO 8601 timestamp string, not a number")
    return value


def to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


Identifier = Annotated[str, AfterValidator(check_identifier)]
Timestamp = Annotated[datetime, BeforeValidator(_require_iso_text), AfterValidator(to_utc)]
Score = Annotated[float, Field(ge=0.0, le=1.0)]
LakeURL = Annotated[str, Field(min_length=1), AfterValidator(check_lake_url)]
ItemStatus = Literal["ok", "filtered", "failed"]


class SearchResultItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    source_id: str | None = Field(default=None, min_length=1, max_length=256)
    rank: NonNegativeInt | None = None
    url: LakeURL
    title: str
    snippet: str | None = None
    content_text: str | None = None
    language: str | None = None
    published_at: Timestamp | None = None
    captured_at: Timestamp
    http_status: int | None = Field(default=None, ge=100, le=599)
    score_relevance: Score | None = None
    score_freshness: Score | None = None
    score_authority: Score | None = None
    score_final: Score
    status: ItemStatus
    error_code: str | None = None

    @model_validator(mode="after")
    def _failed_needs_error_code_and_source_id_defaults(self) -> "SearchResultItem":
        if self.status == "failed" and not self.error_code:
            raise ValueError("status 'failed' needs an error_code")
        if self.source_id is None:
            self.source_id = source_id_for(self.url)
        return self


class SearchResultStats(BaseModel):
    model_config = ConfigDict(extra="allow")

    total_returned: NonNegativeInt = 0
    kept_after_filter: NonNegativeInt = 0
    failed_count: NonNegativeInt = 0
    dedup_count: NonNegativeInt = 0

    @classmethod
    def of(cls, results: list[SearchResultItem], *, total_returned: int | None = None,
           dedup_count: int = 0) -> "SearchResultStats":
        return cls(
            total_returned=len(results) if total_returned is None else total_returned,
            kept_after_filter=sum(1 for r in results if r.status == "ok"),
            failed_count=sum(1 for r in results if r.status == "failed"),
            dedup_count=dedup_count,
        )


class SearchResultBundle(BaseModel):
    model_config = ConfigDict(extra="allow")

    task_id: Identifier | None = None
    query_id: Identifier
    query_text: str
    query_intent: str | None = None
    provider: str = Field(min_length=1)
    executed_at: Timestamp
    results: list[SearchResultItem]
    stats: SearchResultStats | None = None

    @model_validator(mode="after")
    def _stats_default_to_counts(self) -> "SearchResultBundle":
        if self.stats is None:
            self.stats = SearchResultStats.of(self.results)
        return self


class SearchReadCursor(BaseModel):
    task_id: Identifier
    last_query_id: str | None = None
    last_source_id: str | None = None
    consumed_count: NonNegativeInt = 0
    updated_at: Timestamp
