-- A governed run begins; a retried start of the same trace inserts nothing.
-- host, pid and process_started name the process running it; lease_seconds
-- is how long it may go without a heartbeat before readers take it for
-- interrupted.
INSERT INTO run_log (trace_id, task_id, question, demand_id, policy_source, status, budget, policy, started_at,
                     host, pid, process_started, flow_run_id, lease_seconds)
SELECT $trace_id, $task_id, $question, $demand_id, $policy_source, 'running', $budget, $policy, now(),
       $host, $pid, $process_started, $flow_run_id, $lease_seconds
WHERE NOT EXISTS (SELECT 1 FROM run_log WHERE trace_id = $trace_id);
