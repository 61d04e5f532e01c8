-- The catalog: which bundles landed, where their files are, what was refused,
-- and how far each task's consolidation has read. Idempotent.
CREATE TABLE IF NOT EXISTS bundle_catalog (
    bundle_uid        VARCHAR NOT NULL,
    task_id           VARCHAR NOT NULL,
    query_id          VARCHAR NOT NULL,
    query_sort_key    VARCHAR NOT NULL,
    query_text        VARCHAR,
    query_intent      VARCHAR,
    provider          VARCHAR,
    executed_at       TIMESTAMPTZ,
    item_count        INTEGER,
    total_returned    INTEGER,
    kept_after_filter INTEGER,
    failed_count      INTEGER,
    dedup_count       INTEGER,
    content_hash      VARCHAR NOT NULL,
    raw_path          VARCHAR,
    results_file      VARCHAR,
    source_file       VARCHAR,
    landed_at         TIMESTAMPTZ NOT NULL,
    landing_seq       BIGINT NOT NULL
);
-- how long the search call behind a bundle took (stats.duration_ms); catalogs
-- created before the column get it here
ALTER TABLE bundle_catalog ADD COLUMN IF NOT EXISTS duration_ms BIGINT;

CREATE TABLE IF NOT EXISTS lake_files (
    path       VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,
    task_id    VARCHAR NOT NULL,
    row_count  BIGINT,
    written_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS quarantine_log (
    quarantined_at TIMESTAMPTZ NOT NULL,
    source_path    VARCHAR,
    stored_path    VARCHAR,
    sha256         VARCHAR,
    task_id        VARCHAR,
    query_id       VARCHAR,
    reason         VARCHAR NOT NULL,
    field          VARCHAR,
    item_index     INTEGER,
    message        VARCHAR,
    errors         JSON
);

CREATE TABLE IF NOT EXISTS error_log_entries (
    logged_at    TIMESTAMPTZ NOT NULL,
    task_id      VARCHAR NOT NULL,
    query_id     VARCHAR,
    provider     VARCHAR,
    source_id    VARCHAR,
    url          VARCHAR,
    title        VARCHAR,
    error_code   VARCHAR,
    http_status  INTEGER,
    captured_at  TIMESTAMPTZ,
    stage        VARCHAR NOT NULL,
    message      VARCHAR
);

CREATE TABLE IF NOT EXISTS read_cursor (
    task_id          VARCHAR PRIMARY KEY,
    last_query_id    VARCHAR,
    last_source_id   VARCHAR,
    consumed_count   BIGINT NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    last_landing_seq BIGINT NOT NULL,
    output_rows      BIGINT NOT NULL,
    needs_rebuild    BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE IF NOT EXISTS pending_publish (
    txn_id     VARCHAR NOT NULL,
    plan       VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
