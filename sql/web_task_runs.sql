-- A task's governed runs, newest first.
SELECT trace_id, status, candidate_count, filtered_count, publisher_count, elapsed_seconds,
       policy_source, started_at, error
FROM runs
WHERE task_id = $1
ORDER BY started_at DESC;
