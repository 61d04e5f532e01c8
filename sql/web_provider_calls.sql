-- Chart: search calls per provider for a task — how many, how many failed
-- (no usable result, only failed items), and their latency.
SELECT provider,
       count(*) AS calls,
       count(*) FILTER (WHERE failed_count > 0 AND kept_after_filter = 0) AS failed,
       round(median(duration_ms)) AS median_ms,
       max(duration_ms) AS max_ms
FROM bundles
WHERE task_id = $1
GROUP BY provider
ORDER BY provider;
