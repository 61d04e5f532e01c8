"""A watch: one question researched again every interval, each round landing
into the watch's topic (its task id), and what changed from one round to
the next."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field, field_validator

from schemas.bundle import check_identifier

SHORTEST_INTERVAL = 60  # seconds: a round takes longer than that anyway
LONGEST_INTERVAL = 366 * 86400
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_INTERVAL = re.compile(r"(\d+)\s*([smhdw])")


def span_seconds(text: str) -> int:
    """'6h', '30m', '1d12h', '90s' or plain seconds, as seconds; ValueError
    when the text is none of these."""
    compact = "".join(text.lower().split())
    if compact.isdigit():
        return int(compact)
    if compact and _INTERVAL.sub("", compact) == "":
        return sum(int(n) * _UNITS[unit] for n, unit in _INTERVAL.findall(compact))
    raise ValueError(f"{text!r} is not a span of time: write e.g. 6h, 30m, 1d or 90s")


def parse_interval(text: str) -> int:
    """A watch's --every, as seconds; ValueError saying what is accepted."""
    try:
        seconds = span_seconds(text)
    except ValueError:
        raise ValueError(f"--every {text!r} is not an interval: write e.g. 6h, 30m, 1d or 90s") from None
    if not SHORTEST_INTERVAL <= seconds <= LONGEST_INTERVAL:
        raise ValueError(f"--every {text!r} must be between 1 minute and a year")
    return seconds


def interval_words(seconds: int) -> str:
    """6h, 1d12h, 90m: the shortest way to write an interval."""
    parts = []
    for unit in ("d", "h", "m", "s"):
        count, seconds = divmod(seconds, _UNITS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


class WatchParams(BaseModel):
    """The research options every round runs with."""

    library: str | None = None
    providers: list[str] | None = None
    target: int | None = Field(default=None, ge=1, le=200)
    max_results: int | None = Field(default=None, ge=1, le=50)


class Watch(BaseModel):
    name: str
    question: str = Field(min_length=1)
    interval_seconds: int = Field(ge=SHORTEST_INTERVAL, le=LONGEST_INTERVAL)
    params: WatchParams = Field(default_factory=WatchParams)

    @field_validator("name")
    @classmethod
    def _name_is_an_identifier(cls, value: str) -> str:
        return check_identifier(value)

    @property
    def topic(self) -> str:
        """The task id every round lands into."""
        return topic_of(self.name)

    @property
    def deployment_name(self) -> str:
        return f"watch-{self.name}"


def topic_of(name: str) -> str:
    return f"watch-{name}"


# The kinds of change a round records, in the order they are told.
KINDS = ("source_added", "source_dropped", "source_moved", "content_changed", "insight_added",
         "insight_removed", "quote_added", "quote_removed", "answer_unchanged")


@dataclass(frozen=True)
class Change:
    """One row of the `changes` view."""

    kind: str
    url: str | None = None
    title: str | None = None
    old_rank: int | None = None
    new_rank: int | None = None
    detail: str | None = None


def change_counts(changes: list[Change]) -> dict[str, int]:
    """How many changes of each kind (every kind, zero when none): the
    payload of the event a round emits."""
    return {kind: sum(1 for c in changes if c.kind == kind) for kind in KINDS}
