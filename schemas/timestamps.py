"""One reading of a moment as UTC, shared by the contracts and the stages
that compare moments (freshness, date filters)."""

from __future__ import annotations

from datetime import datetime, timezone


def to_utc(value: datetime) -> datetime:
    """`value` in UTC; a naive moment is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)
