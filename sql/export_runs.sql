-- One task's rows of `runs`, for its plain Parquet copy (tasks/lake/exports.py).
SELECT * FROM runs WHERE task_id = ? ORDER BY started_at;
