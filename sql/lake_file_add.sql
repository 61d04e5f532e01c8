INSERT INTO lake_files (path, kind, task_id, row_count, written_at) VALUES (?, ?, ?, ?, now());
