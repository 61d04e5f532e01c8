-- failed items go to the error log; they never stop the read.
INSERT INTO error_log_entries (logged_at, task_id, query_id, provider, source_id, url, title,
                               error_code, http_status, captured_at, stage, message)
SELECT now(), task_id, query_id, provider, source_id, url, title, error_code, http_status,
       captured_at, 'consolidate', NULL
FROM new_items WHERE status = 'failed'
ORDER BY query_sort_key, query_id, score_final DESC, rank NULLS LAST, source_id, item_index;
