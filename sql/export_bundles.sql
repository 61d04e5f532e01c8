-- One task's rows of `bundles`, for its plain Parquet copy (tasks/lake/exports.py).
SELECT * FROM bundles WHERE task_id = ? ORDER BY landing_seq, query_id, provider;
