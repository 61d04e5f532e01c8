-- Lake keys of a task's published report files.
SELECT md_path, html_path, json_path FROM report_catalog WHERE task_id = ?;
