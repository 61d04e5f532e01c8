-- A governed run begins; a retried start of the same trace inserts nothing.
-- ?: trace_id, task_id, question, demand_id, policy_source, budget, policy,
--    host, pid, process_started (the process running it), flow_run_id, trace_id
INSERT INTO run_log (trace_id, task_id, question, demand_id, policy_source, status, budget, policy, started_at,
                     host, pid, process_started, flow_run_id)
SELECT ?, ?, ?, ?, ?, 'running', ?, ?, now(), ?, ?, ?, ?
WHERE NOT EXISTS (SELECT 1 FROM run_log WHERE trace_id = ?);
