-- Which publisher published which selected source. ?: trace_id, task_id, publishers, source_ids
INSERT INTO publisher_source_log (trace_id, task_id, publisher, source_id)
SELECT ?, ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]);
