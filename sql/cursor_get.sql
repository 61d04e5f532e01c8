SELECT last_query_id, last_source_id, consumed_count, last_snapshot, needs_rebuild
FROM read_cursor WHERE task_id = ?;
