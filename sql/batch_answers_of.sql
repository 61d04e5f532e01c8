-- A batch's answers, in file order. ?: batch_id
SELECT batch_id, "row", question, task_id, status, answered, first_insight, citation_count,
       top_source_url, top_source_title, elapsed_seconds
FROM batch_answers WHERE batch_id = ? ORDER BY "row";
