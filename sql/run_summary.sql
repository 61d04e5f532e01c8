-- One governed run as RunSummary reads it, its status as the runs view judges it.
SELECT trace_id, task_id, status, policy_source, candidate_count, filtered_count, publisher_count,
       elapsed_seconds, CAST(stage_history AS VARCHAR) AS stage_history,
       CAST(outputs AS VARCHAR) AS outputs, error
FROM runs
WHERE trace_id = ?;
