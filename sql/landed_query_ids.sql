SELECT query_id FROM bundle_catalog WHERE task_id = ?;
