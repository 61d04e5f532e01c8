-- One row per source: the first occurrence read wins; earlier output (prev)
-- was read before anything new. final_rank orders the whole task by score.
WITH ok AS (
    SELECT * FROM new_items WHERE status = 'ok'
),
occurrences AS (
    SELECT source_id, query_id, min(query_sort_key) AS sort_key, count(*) AS n
    FROM ok GROUP BY source_id, query_id
),
seen AS (
    SELECT source_id, sum(n)::BIGINT AS seen_count,
           list(query_id ORDER BY sort_key, query_id) AS query_ids
    FROM occurrences GROUP BY source_id
),
winners AS (
    SELECT * FROM ok
    QUALIFY row_number() OVER (
        PARTITION BY source_id
        ORDER BY query_sort_key, query_id, score_final DESC, rank NULLS LAST, item_index) = 1
),
prev AS (
    SELECT * FROM read_parquet(getvariable('prev_file'))
),
merged AS (
    SELECT prev.* REPLACE (
               prev.seen_count + coalesce(seen.seen_count, 0) AS seen_count,
               list_concat(prev.query_ids, coalesce(seen.query_ids, [])) AS query_ids)
    FROM prev LEFT JOIN seen USING (source_id)
    UNION ALL BY NAME
    SELECT w.task_id, w.source_id, s.seen_count, s.query_ids, w.query_id, w.query_text,
           w.query_intent, w.provider, w.rank, w.url, w.title, w.snippet, w.content_text,
           w.language, w.published_at, w.captured_at, w.http_status, w.score_relevance,
           w.score_freshness, w.score_authority, w.score_final
    FROM winners w JOIN seen s USING (source_id)
    WHERE w.source_id NOT IN (SELECT source_id FROM prev)
)
SELECT task_id, source_id,
       row_number() OVER (ORDER BY score_final DESC, source_id) AS final_rank,
       seen_count, query_ids, query_id, query_text, query_intent, provider, rank, url, title,
       snippet, content_text, language, published_at, captured_at, http_status,
       score_relevance, score_freshness, score_authority, score_final
FROM merged
ORDER BY final_rank;
