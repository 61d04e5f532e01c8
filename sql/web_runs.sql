-- The page's runs list: the latest governed runs, newest first.
SELECT trace_id, task_id, question, status, candidate_count, filtered_count, publisher_count,
       elapsed_seconds, policy_source, started_at, error
FROM runs
ORDER BY started_at DESC
LIMIT $1;
