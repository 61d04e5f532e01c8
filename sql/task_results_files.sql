SELECT DISTINCT results_file FROM bundle_catalog
WHERE task_id = ? AND landing_seq > ? AND results_file IS NOT NULL ORDER BY 1;
