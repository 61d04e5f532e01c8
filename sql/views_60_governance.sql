-- The SQL surface of governed runs (tables in schema_60_governance.sql).
CREATE OR REPLACE VIEW runs AS
    SELECT trace_id, task_id, question, demand_id, policy_source, status,
           candidate_count, filtered_count, publisher_count, elapsed_seconds,
           stage_history, outputs, budget, policy, error, started_at, finished_at, host, pid, flow_run_id
    FROM run_log;

CREATE OR REPLACE VIEW run_events AS
    SELECT trace_id, task_id, seq, "at", kind, name, status, detail
    FROM run_event_log;

CREATE OR REPLACE VIEW selections AS
    SELECT trace_id, task_id, source_id, url, title, quality, rank
    FROM selection_log;

CREATE OR REPLACE VIEW drops AS
    SELECT trace_id, task_id, source_id, url, title, stage, reason
    FROM drop_log;

CREATE OR REPLACE VIEW publishers AS
    SELECT trace_id, task_id, publisher, article_count, sample_titles, source_urls
    FROM publisher_log;

CREATE OR REPLACE VIEW publisher_sources AS
    SELECT trace_id, task_id, publisher, source_id
    FROM publisher_source_log;
