-- The dropped candidates of a run. ?: trace_id, task_id, source_ids, urls, titles, stages, reasons
INSERT INTO drop_log (trace_id, task_id, source_id, url, title, stage, reason)
SELECT ?, ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[]),
       unnest(?::VARCHAR[]), unnest(?::VARCHAR[]);
