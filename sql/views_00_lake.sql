-- The SQL surface. Parquet-backed views read the files the catalog lists
-- (session variables set by tasks/catalog.py before this runs).
CREATE OR REPLACE TEMP VIEW results AS
    SELECT * FROM read_parquet(getvariable('results_files'));

CREATE OR REPLACE TEMP VIEW consolidated AS
    SELECT * FROM read_parquet(getvariable('consolidated_files'));

CREATE OR REPLACE TEMP VIEW bundles AS
    SELECT task_id, query_id, query_text, query_intent, provider, executed_at,
           item_count, total_returned, kept_after_filter, failed_count, dedup_count, duration_ms,
           bundle_uid, content_hash, raw_path, results_file, source_file, landed_at, landing_seq
    FROM bundle_catalog;

CREATE OR REPLACE TEMP VIEW search_read_cursor AS
    SELECT task_id, last_query_id, last_source_id, consumed_count, updated_at
    FROM read_cursor;

CREATE OR REPLACE TEMP VIEW error_log AS
    SELECT * FROM error_log_entries;

CREATE OR REPLACE TEMP VIEW quarantine AS
    SELECT * FROM quarantine_log;
