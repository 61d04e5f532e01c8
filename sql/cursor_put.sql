INSERT INTO read_cursor (task_id, last_query_id, last_source_id, consumed_count, updated_at,
                         last_landing_seq, output_rows, needs_rebuild)
VALUES (?, ?, ?, ?, now(), ?, ?, false)
ON CONFLICT (task_id) DO UPDATE SET
    last_query_id = excluded.last_query_id,
    last_source_id = excluded.last_source_id,
    consumed_count = excluded.consumed_count,
    updated_at = excluded.updated_at,
    last_landing_seq = excluded.last_landing_seq,
    output_rows = excluded.output_rows,
    needs_rebuild = false;
