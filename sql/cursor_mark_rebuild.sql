UPDATE read_cursor SET needs_rebuild = true WHERE task_id = ?;
