-- A run whose process ended after it published its report: its work was
-- done, only its closing row was lost. ?: trace_id
UPDATE run_log
SET status = 'complete', error = NULL, finished_at = now()
WHERE trace_id = ? AND status = 'running';
