INSERT INTO run_event_log (trace_id, task_id, seq, "at", kind, name, status, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
