-- The SQL surface of the lake: `results` and `consolidated` are tables; these
-- views give the catalog tables their analysts' names.
-- landing_seq: the lake snapshot in which the bundle landed (later landings
-- have larger numbers).
CREATE OR REPLACE VIEW bundles AS
    SELECT task_id, query_id, query_text, query_intent, provider, executed_at,
           item_count, total_returned, kept_after_filter, failed_count, dedup_count, duration_ms,
           bundle_uid, content_hash, raw_path, source_file, landed_at, snapshot_id AS landing_seq, flow_run_id
    FROM bundle_catalog;

CREATE OR REPLACE VIEW search_read_cursor AS
    SELECT task_id, last_query_id, last_source_id, consumed_count, updated_at
    FROM read_cursor;

CREATE OR REPLACE VIEW error_log AS
    SELECT * FROM error_log_entries;

CREATE OR REPLACE VIEW quarantine AS
    SELECT * FROM quarantine_log;
