-- Forget a task's previous report citations (its report is being replaced).
DELETE FROM report_citation_catalog WHERE task_id = ?;
