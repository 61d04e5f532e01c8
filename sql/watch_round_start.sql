-- A round begins: task_id, name, round, run_id.
INSERT INTO watch_round_log (task_id, name, round, run_id, started_at, finished_at, status, error)
VALUES (?, ?, ?, ?, now(), NULL, 'running', NULL);
