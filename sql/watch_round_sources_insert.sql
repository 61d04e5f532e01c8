-- The round's (?) sources of the topic (?), as consolidation ranked them.
INSERT INTO watch_round_sources (task_id, round, source_id, url, title, final_rank, content_hash)
SELECT task_id, ?, source_id, url, title, final_rank, md5(coalesce(content_text, snippet, ''))
FROM consolidated
WHERE task_id = ?;
