-- Forget a task's previous report row (its files are being replaced).
DELETE FROM report_catalog WHERE task_id = ?;
