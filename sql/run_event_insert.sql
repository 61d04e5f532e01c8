-- Trace lines of a run, one list element per row (lists zip).
-- ?: trace_id, task_id, seqs, ats, kinds, names, statuses, details
INSERT INTO run_event_log (trace_id, task_id, seq, "at", kind, name, status, detail)
SELECT ?, ?, unnest(?::INTEGER[]), unnest(?::TIMESTAMPTZ[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[]),
       unnest(?::VARCHAR[]), unnest(?::VARCHAR[]);
