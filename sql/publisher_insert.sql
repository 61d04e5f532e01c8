-- The publishers of a run. ?: trace_id, task_id, publishers, article_counts,
-- sample_titles (JSON texts), source_urls (JSON texts)
INSERT INTO publisher_log (trace_id, task_id, publisher, article_count, sample_titles, source_urls)
SELECT ?, ?, unnest(?::VARCHAR[]), unnest(?::INTEGER[]), unnest(?::JSON[]), unnest(?::JSON[]);
