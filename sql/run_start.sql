-- A governed run begins; a retried start of the same trace inserts nothing.
-- ?: trace_id, task_id, question, demand_id, policy_source, budget, policy, trace_id
INSERT INTO run_log (trace_id, task_id, question, demand_id, policy_source, status, budget, policy, started_at)
SELECT ?, ?, ?, ?, ?, 'running', ?, ?, now()
WHERE NOT EXISTS (SELECT 1 FROM run_log WHERE trace_id = ?);
