-- Chart: distinct sources each provider returned for a task.
SELECT provider, count(DISTINCT source_id) AS sources
FROM results
WHERE task_id = $1 AND status = 'ok'
GROUP BY provider
ORDER BY sources DESC, provider;
