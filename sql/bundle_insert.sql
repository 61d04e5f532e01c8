INSERT INTO bundle_catalog (
    bundle_uid, task_id, query_id, query_sort_key, query_text, query_intent, provider,
    executed_at, item_count, total_returned, kept_after_filter, failed_count, dedup_count,
    content_hash, raw_path, results_file, source_file, landed_at, landing_seq)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now(), ?);
