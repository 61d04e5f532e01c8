DELETE FROM read_cursor WHERE task_id = ?;
