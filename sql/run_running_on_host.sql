-- Runs still marked running whose process ran on this host, and whether the
-- run's flow already published its report (its last step). ?: host
SELECT trace_id, task_id, pid, process_started,
       flow_run_id IS NOT NULL AND EXISTS (SELECT 1 FROM report_catalog rep
                                           WHERE rep.flow_run_id = run_log.flow_run_id) AS published
FROM run_log
WHERE status = 'running' AND host = ? AND pid IS NOT NULL;
