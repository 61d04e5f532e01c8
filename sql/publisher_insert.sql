-- The publishers of a run, one list element per row (lists zip);
-- sample_titles and source_urls are JSON texts.
INSERT INTO publisher_log (trace_id, task_id, publisher, article_count, sample_titles, source_urls)
SELECT $trace_id, $task_id, unnest($publishers::VARCHAR[]), unnest($article_counts::INTEGER[]),
       unnest($sample_titles::JSON[]), unnest($source_urls::JSON[]);
