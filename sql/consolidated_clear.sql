DELETE FROM consolidated WHERE task_id = ?;
