-- The lake's tasks, the latest first: the question, how many governed runs
-- the task had, how the latest one ended and when it started, and when its
-- latest bundle landed (a task of `ingest` or `ask` has bundles and no run;
-- an asked one takes its question from `ask`). $1: how many.
WITH run_totals AS (
    SELECT task_id, count(*) AS runs, arg_max(status, started_at) AS last_status,
           max(started_at) AS last_run_at, arg_max(question, started_at) AS question
    FROM runs
    GROUP BY task_id
),
landings AS (
    SELECT task_id, max(landed_at) AS last_landed_at
    FROM bundles
    GROUP BY task_id
),
asked AS (
    SELECT task_id, arg_max(question, created_at) AS question
    FROM ask_messages
    GROUP BY task_id
)
SELECT task_id, coalesce(r.question, a.question) AS question, coalesce(r.runs, 0) AS runs, r.last_status,
       r.last_run_at, l.last_landed_at
FROM run_totals AS r
FULL JOIN landings AS l USING (task_id)
LEFT JOIN asked AS a USING (task_id)
ORDER BY greatest(r.last_run_at, l.last_landed_at) DESC, task_id
LIMIT $1;
