-- The lake's tables: which bundles landed and their items, the consolidated
-- output, what was refused, and how far each task's consolidation has read.
-- Idempotent.

-- The domain of a web URL, as searchlake names a source's site everywhere
-- (schemas/urls.py domain_of, the publishers, ask's citations): its host,
-- lower-case, without user info, port or a leading "www." — the host rather
-- than the registrable domain, which needs the public-suffix list (and
-- docs.python.org and peps.python.org are different sites). NULL for a
-- library file (file:) or anything else without a web host.
CREATE OR REPLACE MACRO url_domain(url) AS nullif(
    regexp_replace(                                                           -- 4. without a leading "www."
        lower(regexp_replace(                                                 -- 3. the host, lower-case:
            regexp_replace(                                                   --    IPv6 unbracketed, no port
                regexp_extract(url, '^[\s\pZ]*[Hh][Tt][Tt][Pp][Ss]?://([^/?#]*)', 1),  -- 1. an http(s) URL's authority
                '^.*@', ''),                                                  -- 2. without user info
            '^\[([^\]]*)\].*$|^([^:]*).*$', '\1\2')),
        '^www\.', ''),
    '');

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
    duration_ms       BIGINT,     -- how long the search call took (stats.duration_ms)
    content_hash      VARCHAR NOT NULL,
    raw_path          VARCHAR,
    source_file       VARCHAR,
    landed_at         TIMESTAMPTZ NOT NULL
);
-- The Prefect flow run that landed the bundle (NULL outside one: the command
-- line's ingest): added to lakes made before it; their rows have none.
ALTER TABLE bundle_catalog ADD COLUMN IF NOT EXISTS flow_run_id VARCHAR;

-- Every item of every landed bundle (schemas/rows.py RESULTS), one file set
-- per task.
CREATE TABLE IF NOT EXISTS results (
    task_id         VARCHAR NOT NULL,
    query_id        VARCHAR NOT NULL,
    query_sort_key  VARCHAR NOT NULL,
    query_text      VARCHAR,
    query_intent    VARCHAR,
    provider        VARCHAR,
    executed_at     TIMESTAMPTZ,
    bundle_uid      VARCHAR NOT NULL,
    item_index      INTEGER NOT NULL,
    source_id       VARCHAR,
    rank            INTEGER,
    url             VARCHAR,
    title           VARCHAR,
    snippet         VARCHAR,
    content_text    VARCHAR,
    language        VARCHAR,
    published_at    TIMESTAMPTZ,
    captured_at     TIMESTAMPTZ,
    http_status     INTEGER,
    score_relevance DOUBLE,
    score_freshness DOUBLE,
    score_authority DOUBLE,
    score_final     DOUBLE,
    status          VARCHAR,
    error_code      VARCHAR
);
ALTER TABLE results SET PARTITIONED BY (task_id);
-- Why a failed item failed, in words (the item's error_message): added to
-- lakes made before it; their earlier rows have none.
ALTER TABLE results ADD COLUMN IF NOT EXISTS error_message VARCHAR;

-- One row per source and task: the consolidated output (sql/consolidate_merge.sql
-- writes it), replaced per task by each consolidation.
CREATE TABLE IF NOT EXISTS consolidated (
    task_id         VARCHAR NOT NULL,
    source_id       VARCHAR NOT NULL,
    final_rank      BIGINT,
    seen_count      BIGINT,
    query_ids       VARCHAR[],
    query_id        VARCHAR,
    query_text      VARCHAR,
    query_intent    VARCHAR,
    provider        VARCHAR,
    rank            INTEGER,
    url             VARCHAR,
    title           VARCHAR,
    snippet         VARCHAR,
    content_text    VARCHAR,
    language        VARCHAR,
    published_at    TIMESTAMPTZ,
    captured_at     TIMESTAMPTZ,
    http_status     INTEGER,
    score_relevance DOUBLE,
    score_freshness DOUBLE,
    score_authority DOUBLE,
    score_final     DOUBLE
);
ALTER TABLE consolidated SET PARTITIONED BY (task_id);
-- The source's site (url_domain): added to lakes made before it, and filled
-- in for the rows they hold.
ALTER TABLE consolidated ADD COLUMN IF NOT EXISTS domain VARCHAR;
UPDATE consolidated SET domain = url_domain(url) WHERE domain IS NULL AND url_domain(url) IS NOT NULL;

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
-- The refused file's size (stored_path keeps at most its first 64 KiB):
-- added to lakes made before it.
ALTER TABLE quarantine_log ADD COLUMN IF NOT EXISTS size_bytes BIGINT;

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

-- One row per consolidated task (replaced, never updated in place: DuckLake
-- has no keys). last_snapshot: the lake snapshot up to which the task's
-- bundles were read.
CREATE TABLE IF NOT EXISTS read_cursor (
    task_id          VARCHAR NOT NULL,
    last_query_id    VARCHAR,
    last_source_id   VARCHAR,
    consumed_count   BIGINT NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    last_snapshot    BIGINT NOT NULL,
    output_rows      BIGINT NOT NULL,
    needs_rebuild    BOOLEAN NOT NULL
);

-- A row every consolidation rewrites: two consolidations committing at once
-- then always conflict (their other deletes may find nothing to delete, the
-- first time a task is consolidated), and the later one runs again.
CREATE TABLE IF NOT EXISTS commit_tokens (
    name       VARCHAR NOT NULL,
    bumped_at  TIMESTAMPTZ NOT NULL
);
INSERT INTO commit_tokens SELECT 'consolidate', now()
WHERE NOT EXISTS (SELECT 1 FROM commit_tokens WHERE name = 'consolidate');

-- Which version of these schema files the catalog holds.
CREATE TABLE IF NOT EXISTS searchlake_schema (
    fingerprint VARCHAR NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL
);

-- Table files are written with snappy: faster to write than the default zstd.
CALL lake.set_option('parquet_compression', 'snappy');
