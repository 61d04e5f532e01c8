-- One task's rows of `consolidated`, for its plain Parquet copy (tasks/lake/exports.py).
SELECT * FROM consolidated WHERE task_id = ? ORDER BY final_rank;
