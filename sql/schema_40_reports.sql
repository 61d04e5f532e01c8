-- One row per task: the report last published for it (the files under
-- reports/task_id=<T>/ are replaced in place, so older rows would point at
-- newer files; publish_report replaces the row in the same transaction).
CREATE TABLE IF NOT EXISTS report_catalog (
    task_id            VARCHAR NOT NULL,
    generated_at       TIMESTAMPTZ NOT NULL,
    question           VARCHAR,
    language           VARCHAR,
    synthesizer        VARCHAR,
    source_count       INTEGER,
    cited_source_count INTEGER,
    citation_count     INTEGER,
    unverified_count   INTEGER,
    insight_count      INTEGER,
    warning_count      INTEGER,
    md_path            VARCHAR NOT NULL,
    html_path          VARCHAR NOT NULL,
    json_path          VARCHAR NOT NULL,
    duration_ms        BIGINT,
    tokens             BIGINT
);
-- The Prefect flow run that published the report (NULL outside one): added to
-- lakes made before it; their rows have none.
ALTER TABLE report_catalog ADD COLUMN IF NOT EXISTS flow_run_id VARCHAR;
-- The answer's first insight, for tables of answers (batch_answers): added
-- to lakes made before it; their rows have none.
ALTER TABLE report_catalog ADD COLUMN IF NOT EXISTS first_insight VARCHAR;

-- Every citation of a task's published report, replaced with the report.
-- quote_start/quote_end: where the quote lies in the cited source's stored
-- text (`consolidated.content_text`, or its snippet when quoted_field says
-- so): text[quote_start:quote_end] = quote. NULL for an unverified quote.
CREATE TABLE IF NOT EXISTS report_citation_catalog (
    task_id         VARCHAR NOT NULL,
    citation_number INTEGER,
    source_id       VARCHAR NOT NULL,
    url             VARCHAR,
    title           VARCHAR,
    quote           VARCHAR,
    quote_start     INTEGER,
    quote_end       INTEGER,
    verified        BOOLEAN NOT NULL,
    section         VARCHAR NOT NULL,
    item_index      INTEGER NOT NULL,
    quoted_field    VARCHAR
);
