-- A run whose process ended after it published its report: its work was
-- done, only its closing row was lost. It finished when its report was
-- written. ?: trace_id
UPDATE run_log
SET status = 'complete', error = NULL,
    finished_at = coalesce((SELECT max(rep.generated_at) FROM report_catalog rep
                            WHERE rep.flow_run_id = run_log.flow_run_id), now()),
    elapsed_seconds = epoch(coalesce((SELECT max(rep.generated_at) FROM report_catalog rep
                                      WHERE rep.flow_run_id = run_log.flow_run_id), now())) - epoch(started_at)
WHERE trace_id = ? AND status = 'running';
