-- The watches not removed, with their rounds: how many, and when the latest started.
SELECT w.name, w.question, w.task_id, w.interval_seconds, w.params, w.created_at, w.deployment_id,
       count(r.round) AS rounds, max(r.started_at) AS last_round_at
FROM watch_log AS w
LEFT JOIN watch_round_log AS r ON r.task_id = w.task_id
WHERE w.removed_at IS NULL
GROUP BY ALL
ORDER BY w.name;
