-- What a task's latest run was asked: its question and the choices it
-- recorded as it began ({library, providers, target}; NULL for runs that
-- began before runs recorded them).
SELECT r.question, e.detail -> 'request' AS request
FROM runs r
LEFT JOIN run_events e ON e.trace_id = r.trace_id AND e.kind = 'run' AND e.status = 'running'
WHERE r.task_id = $1
ORDER BY r.started_at DESC, e.seq DESC
LIMIT 1;
