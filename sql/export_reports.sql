-- One task's rows of `reports`, for its plain Parquet copy (tasks/lake/exports.py).
SELECT * FROM reports WHERE task_id = ?;
