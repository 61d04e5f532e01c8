-- A new watch: name, question, task_id, interval_seconds, params (JSON), deployment_id.
INSERT INTO watch_log (name, question, task_id, interval_seconds, params, created_at, removed_at, deployment_id)
VALUES (?, ?, ?, ?, ?, now(), NULL, ?);
