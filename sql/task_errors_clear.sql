DELETE FROM error_log_entries WHERE task_id = ? AND stage = 'consolidate';
