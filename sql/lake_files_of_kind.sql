SELECT path FROM lake_files WHERE kind = ? ORDER BY task_id, path;
