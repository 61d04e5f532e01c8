-- The watch of this name (?), unless it was removed.
SELECT name, question, task_id, interval_seconds, params, created_at, deployment_id
FROM watch_log
WHERE name = ? AND removed_at IS NULL;
