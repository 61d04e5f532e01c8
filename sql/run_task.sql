-- The task of a run.
SELECT task_id FROM run_log WHERE trace_id = ?;
