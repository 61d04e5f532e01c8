-- A task's consolidated sources with their scores, and whether the task's
-- latest complete run selected them.
WITH chosen AS (
    SELECT source_id FROM selections
    WHERE trace_id = (SELECT trace_id FROM runs WHERE task_id = $1 AND status = 'complete'
                      ORDER BY finished_at DESC LIMIT 1)
)
SELECT c.final_rank, c.source_id, c.title, c.url, c.provider, c.seen_count,
       c.score_relevance, c.score_freshness, c.score_authority, c.score_final,
       c.source_id IN (SELECT source_id FROM chosen) AS selected
FROM consolidated c
WHERE c.task_id = $1
ORDER BY c.final_rank
LIMIT $2;
