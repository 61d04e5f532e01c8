-- What the filters of a task's latest run dropped, and why.
SELECT stage, reason, title, url
FROM drops
WHERE trace_id = (SELECT trace_id FROM runs WHERE task_id = $1 ORDER BY started_at DESC LIMIT 1)
ORDER BY stage, title;
