-- The query texts of a task, in reading order: the question's stand-in when
-- no plan or question is given. Parameter: task_id.
SELECT query_text
FROM bundle_catalog
WHERE task_id = ? AND query_text IS NOT NULL
GROUP BY query_text
ORDER BY min(query_sort_key), query_text;
