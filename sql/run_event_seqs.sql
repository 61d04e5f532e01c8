-- The trace lines of a run that are rows already. ?: trace_id
SELECT seq FROM run_event_log WHERE trace_id = ?;
