"""Compaction: merge a task's many small results files into one."""

from __future__ import annotations

from tasks.lake.catalog import Catalog
from tasks.lake.files import Lake, LakeWrite


def compact_results(catalog: Catalog, task_id: str | None = None) -> list[str]:
    lines = []
    for task, paths, row_count in catalog.rows("results_files_by_task", [task_id, task_id]):
        write = LakeWrite(catalog.lake)
        key = Lake.task_key("results", task, f"part-{write.txn}.parquet")
        catalog.set_variables(compact_files=[catalog.lake.uri(p) for p in paths])
        catalog.write_parquet("compact_results", write.staged(key))

        def record(cat: Catalog, task=task, paths=paths, key=key, row_count=row_count) -> None:
            for old in paths:
                cat.run("lake_file_remove", [old])
                cat.run("bundle_move_results_file", [key, old])
                write.delete_after_commit(old)
            cat.run("lake_file_add", [key, "results", task, row_count])

        catalog.commit_write(write, record)
        lines.append(f"{task}: {len(paths)} results files merged into one ({row_count} rows)")
    return lines or ["nothing to compact"]
