-- The dropped candidates of a run, one list element per row (lists zip).
INSERT INTO drop_log (trace_id, task_id, source_id, url, title, stage, reason)
SELECT $trace_id, $task_id, unnest($source_ids::VARCHAR[]), unnest($urls::VARCHAR[]), unnest($titles::VARCHAR[]),
       unnest($stages::VARCHAR[]), unnest($reasons::VARCHAR[]);
