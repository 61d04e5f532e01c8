SELECT bundle_uid, content_hash, results_file, raw_path
FROM bundle_catalog WHERE task_id = ? AND query_id = ?;
