"""A task's consolidated sources and query texts as plain rows, read for
the stages downstream of the lake (synthesis gets them handed in and never
opens the catalog itself)."""

from __future__ import annotations

from typing import Any

from tasks.lake.catalog import Catalog
from tasks.lake.sqlfiles import records


def consolidated_sources(catalog: Catalog, task_id: str, limit: int,
                         source_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """A task's consolidated sources with their text, best first (only
    `source_ids` when given: a governed run's selection), keyed by column."""
    return records(catalog.run("synthesis_sources", [task_id, source_ids, limit]))


def task_query_texts(catalog: Catalog, task_id: str) -> list[str]:
    """The task's query texts in reading order."""
    return [row["query_text"] for row in records(catalog.run("synthesis_task_queries", [task_id]))]
