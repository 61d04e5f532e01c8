-- One task's rows of `error_log`, for its plain Parquet copy (tasks/lake/exports.py).
SELECT * FROM error_log WHERE task_id = ? ORDER BY logged_at;
