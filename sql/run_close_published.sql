-- A run whose process ended after it published its report: its work was
-- done, only its closing row was lost. It finished when its report was
-- written. ?: trace_id
UPDATE run_log
SET status = 'complete', error = NULL, finished_at = rep.written,
    elapsed_seconds = epoch(rep.written) - epoch(run_log.started_at)
FROM (SELECT flow_run_id, max(generated_at) AS written FROM report_catalog GROUP BY flow_run_id) rep
WHERE rep.flow_run_id = run_log.flow_run_id AND run_log.trace_id = ? AND run_log.status = 'running';
