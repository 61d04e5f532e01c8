-- One governed run as RunSummary reads it.
SELECT trace_id, task_id, status, policy_source, candidate_count, filtered_count, publisher_count,
       elapsed_seconds, CAST(stage_history AS VARCHAR) AS stage_history,
       CAST(outputs AS VARCHAR) AS outputs, error
FROM run_log
WHERE trace_id = ?;
