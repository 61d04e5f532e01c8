-- failed items go to the error log, with why they failed; they never stop the read.
INSERT INTO error_log_entries (logged_at, task_id, query_id, provider, source_id, url, title,
                               error_code, http_status, captured_at, stage, message)
SELECT now(), r.task_id, r.query_id, r.provider, r.source_id, r.url, r.title, r.error_code,
       r.http_status, r.captured_at, 'consolidate', r.error_message
FROM results AS r
JOIN (SELECT row_id FROM new_items WHERE status = 'failed') AS failed ON r.rowid = failed.row_id
WHERE r.task_id = getvariable('task_id')
ORDER BY r.query_sort_key, r.query_id, r.score_final DESC, r.rank NULLS LAST, r.source_id, r.item_index;
