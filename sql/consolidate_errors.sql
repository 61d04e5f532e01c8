-- failed items go to the error log; they never stop the read.
INSERT INTO error_log_entries (logged_at, task_id, query_id, provider, source_id, url, title,
                               error_code, http_status, captured_at, stage, message)
SELECT now(), r.task_id, r.query_id, r.provider, r.source_id, r.url, r.title, r.error_code,
       r.http_status, r.captured_at, 'consolidate', NULL
FROM read_parquet(getvariable('new_files'), file_row_number = true) AS r
JOIN (SELECT file_index, file_row_number FROM new_items WHERE status = 'failed') AS failed
  ON r.file_index = failed.file_index AND r.file_row_number = failed.file_row_number
WHERE r.status = 'failed'
ORDER BY r.query_sort_key, r.query_id, r.score_final DESC, r.rank NULLS LAST, r.source_id, r.item_index;
