-- A task's consolidated sources with their text, best first: the synthesis
-- input. Parameters: task_id, the selected source ids (NULL = every source),
-- how many sources at most.
SELECT source_id, url, title, snippet, content_text, language, score_final, query_text
FROM consolidated
WHERE task_id = $1 AND ($2::VARCHAR[] IS NULL OR list_contains($2::VARCHAR[], source_id))
ORDER BY final_rank, source_id
LIMIT $3;
