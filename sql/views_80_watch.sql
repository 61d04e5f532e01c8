-- The SQL surface of watches (tables in schema_80_watch.sql).
CREATE OR REPLACE VIEW watches AS
    SELECT name, question, task_id AS topic, interval_seconds, params, created_at, removed_at, deployment_id
    FROM watch_log;

CREATE OR REPLACE VIEW watch_rounds AS
    SELECT task_id AS topic, name, round, run_id, started_at, finished_at, status, error
    FROM watch_round_log;

-- kind: source_added | source_dropped | source_moved | content_changed |
-- insight_added | insight_removed | quote_added | quote_removed | answer_unchanged
CREATE OR REPLACE VIEW changes AS
    SELECT task_id AS topic, round, "at" AS changed_at, kind, url, title, old_rank, new_rank, detail
    FROM watch_change_log;
