"""A dashboard reads the lake's Parquet files directly, with no searchlake code
(Polars here), and sees exactly what analysts see through the SQL views."""

from __future__ import annotations

import polars as pl


def test_a_dashboard_reads_consolidated_and_results_with_hive_partitions(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9), new_item("https://b.example/2", 0.4)]))
    inbox.write(new_bundle("q2", [new_item("https://b.example/2", 0.8), new_item("https://c.example/3", 0.7)]))
    inbox.write(new_bundle("q1", [new_item("https://d.example/4", 0.5)], task_id="t2"), "t2-q1.json")
    lake.ingest(inbox.folder)
    lake.consolidate("t1")
    lake.consolidate("t2")

    consolidated = (pl.scan_parquet(lake.root / "consolidated" / "*" / "consolidated.parquet", hive_partitioning=True)
                    .sort("task_id", "final_rank").collect())
    through_sql = lake.dicts("select task_id, source_id, url, final_rank, seen_count from consolidated "
                             "order by task_id, final_rank")
    assert consolidated.select("task_id", "source_id", "url", "final_rank", "seen_count").to_dicts() == through_sql
    # b was first read in q1 (0.4): the first occurrence wins, then rank by score_final
    assert consolidated.filter(pl.col("task_id") == "t1")["url"].to_list() == [
        "https://a.example/1", "https://c.example/3", "https://b.example/2"]

    results = pl.scan_parquet(lake.root / "results" / "*" / "*.parquet", hive_partitioning=True)
    per_task = results.group_by("task_id").agg(pl.len().alias("items")).sort("task_id").collect()
    assert per_task.to_dicts() == [{"task_id": "t1", "items": 4}, {"task_id": "t2", "items": 1}]
