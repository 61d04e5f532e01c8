-- The task's next output, added to `consolidated` beside its previous rows
-- (consolidated_old_delete then removes those). One row per source: the first occurrence read wins; earlier output (prev)
-- was read before anything new. final_rank orders the whole task by score, then the provider's rank.
-- Who wins and the ranking are decided on narrow rows (new_items, and the
-- source_id and score of prev); the wide columns are then read for the
-- winning rows only.
INSERT INTO consolidated
WITH prev AS (
    SELECT * FROM consolidated
    WHERE task_id = getvariable('task_id') AND NOT getvariable('rebuild')
),
query_names AS (
    -- ids[n] is the query_id whose query_order is n
    SELECT list(query_id ORDER BY query_order) AS ids
    FROM (SELECT DISTINCT query_order, query_id FROM new_items)
),
seen AS (
    -- winner: the first item in reading order (query_order = (query_sort_key,
    -- query_id), then score_final DESC, rank NULLS LAST, item_index), as a
    -- struct compared field by field; query_id and item_index make it unique.
    SELECT source_id, count(*) AS seen_count,
           list_sort(list_distinct(list(query_order))) AS query_orders,
           arg_min({'score_final': score_final, 'rank': rank, 'row_id': row_id},
                   {'query_order': query_order, 'score_desc': -score_final,
                    'no_rank': rank IS NULL, 'rank': coalesce(rank, 0), 'item_index': item_index}) AS winner
    FROM new_items WHERE status = 'ok'
    GROUP BY source_id
),
seen_named AS (
    SELECT s.source_id, s.seen_count, list_transform(s.query_orders, n -> q.ids[n]) AS query_ids
    FROM seen AS s, query_names AS q
),
firsts AS (
    SELECT source_id, winner.score_final, winner.rank, winner.row_id
    FROM seen WHERE source_id NOT IN (SELECT source_id FROM prev)
),
ranks AS (
    -- equal scores keep the order the provider gave (source_id, a hash of the URL, only settles the rest)
    SELECT source_id, row_number() OVER (ORDER BY score_final DESC, rank NULLS LAST, source_id) AS final_rank
    FROM (SELECT source_id, score_final, rank FROM prev UNION ALL SELECT source_id, score_final, rank FROM firsts)
),
winners AS (
    SELECT r.* FROM results AS r JOIN firsts AS f ON r.rowid = f.row_id
    WHERE r.task_id = getvariable('task_id')
),
merged AS (
    SELECT prev.* REPLACE (
               prev.seen_count + coalesce(seen.seen_count, 0) AS seen_count,
               list_concat(prev.query_ids, coalesce(seen.query_ids, [])) AS query_ids)
    FROM prev LEFT JOIN seen_named AS seen USING (source_id)
    UNION ALL BY NAME
    SELECT w.task_id, w.source_id, s.seen_count, s.query_ids, w.query_id, w.query_text,
           w.query_intent, w.provider, w.rank, w.url, w.title, w.snippet, w.content_text,
           w.language, w.published_at, w.captured_at, w.http_status, w.score_relevance,
           w.score_freshness, w.score_authority, w.score_final, url_domain(w.url) AS domain
    FROM winners w JOIN seen_named s USING (source_id)
)
SELECT m.task_id, m.source_id, r.final_rank, m.seen_count, m.query_ids, m.query_id, m.query_text,
       m.query_intent, m.provider, m.rank, m.url, m.title, m.snippet, m.content_text, m.language,
       m.published_at, m.captured_at, m.http_status, m.score_relevance, m.score_freshness,
       m.score_authority, m.score_final, m.domain
FROM merged AS m JOIN ranks AS r USING (source_id)
ORDER BY r.final_rank;
