-- The new cursor row of a task (cursor_delete removed the old one first).
INSERT INTO read_cursor (task_id, last_query_id, last_source_id, consumed_count, updated_at,
                         last_snapshot, output_rows, needs_rebuild)
VALUES ($task_id, $last_query_id, $last_source_id, $consumed_count, now(), $last_snapshot, $output_rows, false);
