SELECT coalesce(max(landing_seq), 0), count(*) FROM bundle_catalog WHERE task_id = ?;
