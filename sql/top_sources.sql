SELECT final_rank, round(score_final, 3) AS score, seen_count, query_id, title, url
FROM consolidated WHERE task_id = ? ORDER BY final_rank LIMIT ?;
