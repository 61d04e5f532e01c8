-- Trace lines of a run, one list element per row (lists zip).
INSERT INTO run_event_log (trace_id, task_id, seq, "at", kind, name, status, detail)
SELECT $trace_id, $task_id, unnest($seqs::INTEGER[]), unnest($ats::TIMESTAMPTZ[]), unnest($kinds::VARCHAR[]),
       unnest($names::VARCHAR[]), unnest($statuses::VARCHAR[]), unnest($details::VARCHAR[]);
