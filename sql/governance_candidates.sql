-- The consolidated sources of a task (?1) as candidates of the governed filters.
SELECT source_id, url, title, snippet, content_text, published_at, score_final,
       provider, query_id, final_rank
FROM consolidated
WHERE task_id = ?
ORDER BY final_rank;
