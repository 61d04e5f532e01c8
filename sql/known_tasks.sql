SELECT DISTINCT task_id FROM bundle_catalog ORDER BY task_id;
