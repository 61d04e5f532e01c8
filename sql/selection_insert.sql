-- The selected sources of a run, one list element per row (lists zip).
INSERT INTO selection_log (trace_id, task_id, source_id, url, title, quality, rank)
SELECT $trace_id, $task_id, unnest($source_ids::VARCHAR[]), unnest($urls::VARCHAR[]), unnest($titles::VARCHAR[]),
       unnest($qualities::DOUBLE[]), unnest($ranks::INTEGER[]);
