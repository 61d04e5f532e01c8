"""The retrieval protocol: SearchResultBundle, SearchResultItem,
SearchResultStats and SearchReadCursor."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeInt,
    Strict,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import NotRequired, Required, TypedDict

from schemas.timestamps import to_utc
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


_NUMBER_TEXT = re.compile(r"\s*[+-]?\d+(\.\d*)?\s*")


def _require_iso_text(value: Any) -> Any:
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    # pydantic would read the text "1700000000" as Unix seconds too.
    is_number_text = isinstance(value, str) and _NUMBER_TEXT.fullmatch(value) is not None
    if is_number or is_number_text:
        raise ValueError("must be an ISO 8601 timestamp string, not a number")
    return value


def _to_utc_in_range(value: datetime) -> datetime:
    # 9999-12-31T23:00-05:00 is year 10000 in UTC: Python raises OverflowError,
    # which pydantic would not report as this field's error.
    try:
        return to_utc(value)
    except OverflowError:
        raise ValueError("must lie between the years 1 and 9999 in UTC") from None


# Size limits of a bundle's text fields, in characters: enough for any real
# page, small enough that one bad file cannot bloat the lake.
MAX_URL_CHARS = 8_192
MAX_TITLE_CHARS = 2_000
MAX_QUERY_TEXT_CHARS = 4_000
MAX_SNIPPET_CHARS = 20_000
MAX_CONTENT_CHARS = 1_000_000
MAX_SHORT_CHARS = 256  # provider, query_intent, language, error_code, source_id
MAX_ERROR_MESSAGE_CHARS = 2_000

def clipped(text: str | None, limit: int) -> str | None:
    """Text cut to a size limit: for items this program builds from what a
    provider returned (an ingested bundle over a limit is refused instead)."""
    return text[:limit] if text is not None else None


Identifier = Annotated[str, AfterValidator(check_identifier)]
Timestamp = Annotated[datetime, BeforeValidator(_require_iso_text), AfterValidator(_to_utc_in_range)]
# Numbers must be JSON numbers: strict, so "0.5" and true are refused (an
# integer is still a number for a float field).
Score = Annotated[float, Strict(), Field(ge=0.0, le=1.0)]
# Integers are bounded by the lake column that stores them (INTEGER for the
# counts and rank, BIGINT for duration_ms): a larger number is refused here,
# with its field, instead of failing the whole batch's commit.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
Count = Annotated[int, Strict(), Field(ge=0, le=INT32_MAX)]
Milliseconds = Annotated[int, Strict(), Field(ge=0, le=INT64_MAX)]
HttpStatus = Annotated[int, Strict(), Field(ge=100, le=599)]
ShortText = Annotated[str, Field(max_length=MAX_SHORT_CHARS)]
Title = Annotated[str, Field(max_length=MAX_TITLE_CHARS)]
ErrorMessage = Annotated[str, Field(max_length=MAX_ERROR_MESSAGE_CHARS)]
QueryText = Annotated[str, Field(max_length=MAX_QUERY_TEXT_CHARS)]
Snippet = Annotated[str, Field(max_length=MAX_SNIPPET_CHARS)]
Content = Annotated[str, Field(max_length=MAX_CONTENT_CHARS)]
LakeURL = Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS), AfterValidator(check_lake_url)]
ItemStatus = Literal["ok", "filtered", "failed"]


class SearchResultItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    source_id: str | None = Field(default=None, min_length=1, max_length=MAX_SHORT_CHARS)
    rank: Count | None = None
    url: LakeURL
    title: Title
    snippet: Snippet | None = None
    content_text: Content | None = None
    language: ShortText | None = None
    published_at: Timestamp | None = None
    captured_at: Timestamp
    http_status: HttpStatus | None = None
    score_relevance: Score | None = None
    score_freshness: Score | None = None
    score_authority: Score | None = None
    score_final: Score
    status: ItemStatus
    error_code: ShortText | None = Field(default=None, validate_default=True)
    # Why a failed item failed, in words (the error log's message); not in the
    # original contract, which has only the code.
    error_message: ErrorMessage | None = None

    # A field validator, not the model validator, so that the error names
    # results[i].error_code rather than the whole item.
    @field_validator("error_code")
    @classmethod
    def _failed_needs_error_code(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("status") == "failed" and not value:
            raise ValueError("status 'failed' needs an error_code")
        return value

    @model_validator(mode="after")
    def _source_id_defaults(self) -> "SearchResultItem":
        if self.source_id is None:
            self.source_id = source_id_for(self.url)
        return self


class SearchResultStats(BaseModel):
    model_config = ConfigDict(extra="allow")

    total_returned: Count = 0
    kept_after_filter: Count = 0
    failed_count: Count = 0
    dedup_count: Count = 0
    duration_ms: Milliseconds | None = None  # how long the search call took

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
    query_text: QueryText
    query_intent: ShortText | None = None
    provider: ShortText = Field(min_length=1)
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


# -- the landing fast path ---------------------------------------------------
# A stricter twin of SearchResultBundle that pydantic-core checks without
# calling back into Python, so that landing a large batch does no per-item
# Python work. It accepts a SUBSET of what SearchResultBundle accepts, and
# yields the same values for it: the field types (and their coercions and
# bounds) are the same; each Python check is replaced by a stricter Rust-side
# one:
#   * task_id/query_id: ASCII letters, digits, '_', '.', '-' (a subset of \w);
#   * url: starts with http:// or https:// and then an ASCII letter, digit or
#     '[', or with file: (scheme in any case), and holds no control character,
#     which check_lake_url accepts;
#   * timestamps: RFC 3339 text with a zone (never what _require_iso_text
#     refuses), left as text: the caller converts it (Arrow's cast for items,
#     the lax datetime parse and to_utc for executed_at);
#   * the item model rules are left to the caller: a failed item needs an
#     error_code, and a missing source_id is derived from the URL.
# Whatever this refuses goes through SearchResultBundle for the real verdict.
# Keep the two in step: a field added above needs its twin here.

_FastIdentifier = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")]
# An RFC 3339 timestamp with a zone (Z or +hh:mm), seconds 00-59, at most
# microseconds, years 1000-9998: text that the lax datetime parse reads
# exactly as Arrow's cast to timestamp[us, UTC] does (the caller casts).
_FastTimestamp = Annotated[str, Field(pattern=(
    r"^([1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"))]
_FastLakeURL = Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS, pattern=(
    r"^(?:[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9\[]|[Ff][Ii][Ll][Ee]:)[^\x00-\x1f\x7f-\x9f]*$"))]


class _FastItem(TypedDict, total=False):
    source_id: Annotated[str | None, Field(min_length=1, max_length=MAX_SHORT_CHARS)]
    rank: Count | None
    url: Required[_FastLakeURL]
    title: Required[Title]
    snippet: Snippet | None
    content_text: Content | None
    language: ShortText | None
    published_at: _FastTimestamp | None
    captured_at: Required[_FastTimestamp]
    http_status: HttpStatus | None
    score_relevance: Score | None
    score_freshness: Score | None
    score_authority: Score | None
    score_final: Required[Score]
    status: Required[ItemStatus]
    error_code: ShortText | None
    error_message: ErrorMessage | None


class _FastStats(TypedDict, total=False):
    total_returned: Count
    kept_after_filter: Count
    failed_count: Count
    dedup_count: Count
    duration_ms: Milliseconds | None


class _FastBundle(TypedDict, total=False):
    task_id: _FastIdentifier | None
    query_id: Required[_FastIdentifier]
    query_text: Required[QueryText]
    query_intent: ShortText | None
    provider: Required[Annotated[ShortText, Field(min_length=1)]]
    executed_at: Required[_FastTimestamp]
    results: Required[list[_FastItem]]
    stats: NotRequired[_FastStats | None]


def _fast_twin_in_step() -> bool:
    """The twin names exactly the fields of the models (a cheap drift check)."""
    pairs = [(_FastItem, SearchResultItem), (_FastStats, SearchResultStats), (_FastBundle, SearchResultBundle)]
    return all(set(twin.__annotations__) == set(model.model_fields) for twin, model in pairs)


# validate_json(raw) -> dict, or ValidationError: then ask SearchResultBundle.
# None (no fast path) when the twin has fallen out of step with the models.
FAST_BUNDLE: TypeAdapter | None = TypeAdapter(_FastBundle) if _fast_twin_in_step() else None
