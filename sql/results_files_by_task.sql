SELECT task_id, list(path ORDER BY path), sum(row_count)::BIGINT
FROM lake_files WHERE kind = 'results' AND (? IS NULL OR task_id = ?)
GROUP BY task_id HAVING count(*) > 1 ORDER BY task_id;
