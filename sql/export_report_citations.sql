-- One task's rows of `report_citations`, for its plain Parquet copy (tasks/lake/exports.py).
SELECT * FROM report_citations WHERE task_id = ? ORDER BY citation_number, item_index;
