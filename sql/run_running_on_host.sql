-- Runs still marked running whose process ran on this host. ?: host
SELECT trace_id, task_id, pid, process_started
FROM run_log
WHERE status = 'running' AND host = ? AND pid IS NOT NULL;
