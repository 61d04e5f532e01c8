-- The selected sources of a run, one list element per row (lists zip).
-- ?: trace_id, task_id, source_ids, urls, titles, qualities, ranks
INSERT INTO selection_log (trace_id, task_id, source_id, url, title, quality, rank)
SELECT ?, ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[]),
       unnest(?::DOUBLE[]), unnest(?::INTEGER[]);
