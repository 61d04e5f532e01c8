-- Which of these tasks have a published report. ?: a list of task ids
SELECT task_id FROM report_catalog WHERE list_contains(?, task_id);
