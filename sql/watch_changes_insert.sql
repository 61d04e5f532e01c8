-- What changed in round getvariable('round') of topic getvariable('task_id')
-- since its round getvariable('previous'): sources added, dropped, moved in
-- rank or changed in content (by source_id), the report's insights (by their
-- text) and quotes (by source and text) added or removed; 'answer_unchanged'
-- when no insight or quote came or went.
INSERT INTO watch_change_log (task_id, round, "at", kind, source_id, url, title, old_rank, new_rank, detail)
WITH cur AS (
    SELECT * FROM watch_round_sources WHERE task_id = getvariable('task_id') AND round = getvariable('round')
),
prev AS (
    SELECT * FROM watch_round_sources WHERE task_id = getvariable('task_id') AND round = getvariable('previous')
),
sources AS (
    SELECT 'source_added' AS kind, cur.source_id, cur.url, cur.title, NULL::BIGINT AS old_rank,
           cur.final_rank AS new_rank, NULL AS detail
    FROM cur ANTI JOIN prev USING (source_id)
    UNION ALL
    SELECT 'source_dropped', prev.source_id, prev.url, prev.title, prev.final_rank, NULL, NULL
    FROM prev ANTI JOIN cur USING (source_id)
    UNION ALL
    SELECT 'source_moved', cur.source_id, cur.url, cur.title, prev.final_rank, cur.final_rank,
           CASE WHEN cur.final_rank < prev.final_rank THEN 'up ' || (prev.final_rank - cur.final_rank)
                ELSE 'down ' || (cur.final_rank - prev.final_rank) END
    FROM cur JOIN prev USING (source_id)
    WHERE cur.final_rank IS DISTINCT FROM prev.final_rank
    UNION ALL
    SELECT 'content_changed', cur.source_id, cur.url, cur.title, prev.final_rank, cur.final_rank,
           'content hash ' || left(prev.content_hash, 8) || ' → ' || left(cur.content_hash, 8)
    FROM cur JOIN prev USING (source_id)
    WHERE cur.content_hash IS DISTINCT FROM prev.content_hash
),
answers_cur AS (
    SELECT * FROM watch_round_answers WHERE task_id = getvariable('task_id') AND round = getvariable('round')
),
answers_prev AS (
    SELECT * FROM watch_round_answers WHERE task_id = getvariable('task_id') AND round = getvariable('previous')
),
-- an insight is its text; it is shown with the first source it cites
insights_cur AS (
    SELECT insight, arg_min(url, item_index) AS url, arg_min(title, item_index) AS title,
           arg_min(source_id, item_index) AS source_id
    FROM answers_cur WHERE section = 'insight' AND insight IS NOT NULL GROUP BY insight
),
insights_prev AS (
    SELECT insight, arg_min(url, item_index) AS url, arg_min(title, item_index) AS title,
           arg_min(source_id, item_index) AS source_id
    FROM answers_prev WHERE section = 'insight' AND insight IS NOT NULL GROUP BY insight
),
quotes_cur AS (
    SELECT DISTINCT source_id, url, title, quote FROM answers_cur WHERE coalesce(quote, '') <> ''
),
quotes_prev AS (
    SELECT DISTINCT source_id, url, title, quote FROM answers_prev WHERE coalesce(quote, '') <> ''
),
answer AS (
    SELECT 'insight_added' AS kind, c.source_id, c.url, c.title, c.insight AS detail
    FROM insights_cur AS c ANTI JOIN insights_prev AS p USING (insight)
    UNION ALL
    SELECT 'insight_removed', p.source_id, p.url, p.title, p.insight
    FROM insights_prev AS p ANTI JOIN insights_cur AS c USING (insight)
    UNION ALL
    SELECT 'quote_added', c.source_id, c.url, c.title, c.quote
    FROM quotes_cur AS c ANTI JOIN quotes_prev AS p USING (source_id, quote)
    UNION ALL
    SELECT 'quote_removed', p.source_id, p.url, p.title, p.quote
    FROM quotes_prev AS p ANTI JOIN quotes_cur AS c USING (source_id, quote)
)
SELECT getvariable('task_id'), getvariable('round'), now(), kind, source_id, url, title, old_rank, new_rank, detail
FROM sources
UNION ALL
SELECT getvariable('task_id'), getvariable('round'), now(), kind, source_id, url, title, NULL, NULL, detail
FROM answer
UNION ALL
SELECT getvariable('task_id'), getvariable('round'), now(), 'answer_unchanged', NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM answer);
