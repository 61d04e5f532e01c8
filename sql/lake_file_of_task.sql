SELECT path FROM lake_files WHERE kind = ? AND task_id = ?;
