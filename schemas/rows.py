"""The Arrow schema of the rows landing adds to the lake's `results` table
(sql/schema_00_lake.sql creates the tables; a test keeps the two the same)."""

from __future__ import annotations

import pyarrow as pa

_TS = pa.timestamp("us", tz="UTC")

RESULTS = pa.schema(
    [
        ("task_id", pa.string()),
        ("query_id", pa.string()),
        ("query_sort_key", pa.string()),
        ("query_text", pa.string()),
        ("query_intent", pa.string()),
        ("provider", pa.string()),
        ("executed_at", _TS),
        ("bundle_uid", pa.string()),
        ("item_index", pa.int32()),
        ("source_id", pa.string()),
        ("rank", pa.int32()),
        ("url", pa.string()),
        ("title", pa.string()),
        ("snippet", pa.string()),
        ("content_text", pa.string()),
        ("language", pa.string()),
        ("published_at", _TS),
        ("captured_at", _TS),
        ("http_status", pa.int32()),
        ("score_relevance", pa.float64()),
        ("score_freshness", pa.float64()),
        ("score_authority", pa.float64()),
        ("score_final", pa.float64()),
        ("status", pa.string()),
        ("error_code", pa.string()),
        ("error_message", pa.string()),  # added after the others (sql/schema_00_lake.sql)
    ]
)

ITEM_FIELDS = [
    "source_id", "rank", "url", "title", "snippet", "content_text", "language",
    "published_at", "captured_at", "http_status", "score_relevance", "score_freshness",
    "score_authority", "score_final", "status", "error_code", "error_message",
]
