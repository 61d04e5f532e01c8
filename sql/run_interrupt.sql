-- A run whose process ended before it did. ?: error, trace_id
UPDATE run_log
SET status = 'interrupted', error = ?, finished_at = now()
WHERE trace_id = ? AND status = 'running';
