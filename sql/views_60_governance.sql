-- The SQL surface of governed runs (tables in schema_60_governance.sql).
-- A run still 'running' whose last sign of life (its start, its latest
-- heartbeat) is older than its lease reads as interrupted: its process died
-- (kill -9, a crash, the machine stopped) and can no longer close its row.
-- Every reader judges it the same way, at the moment it reads, and nothing
-- is written: a process that beats again (it was only kept from the
-- catalog) reads as running again. Its finished_at is its last sign of life.
CREATE OR REPLACE VIEW runs AS
    WITH last_beats AS (
        SELECT trace_id, max("at") AS last_beat FROM run_heartbeat_log GROUP BY trace_id
    ),
    judged AS (
        SELECT r.*, greatest(r.started_at, coalesce(b.last_beat, r.started_at)) AS heartbeat_at,
               r.status = 'running' AND r.lease_seconds IS NOT NULL
               AND greatest(r.started_at, coalesce(b.last_beat, r.started_at)) + to_seconds(r.lease_seconds) < now()
                   AS lapsed
        FROM run_log r
        LEFT JOIN last_beats b USING (trace_id)
    )
    SELECT trace_id, task_id, question, demand_id, policy_source,
           CASE WHEN lapsed THEN 'interrupted' ELSE status END AS status,
           candidate_count, filtered_count, publisher_count, elapsed_seconds,
           stage_history, outputs, budget, policy,
           CASE WHEN lapsed
                THEN 'interrupted: the process that ran it (' || coalesce('pid ' || pid || ' on ' || host, 'unknown')
                     || ') gave no sign of life for ' || format('{:g}', lease_seconds) || ' s'
                ELSE error END AS error,
           started_at,
           CASE WHEN lapsed THEN heartbeat_at ELSE finished_at END AS finished_at,
           host, pid, flow_run_id,
           heartbeat_at
    FROM judged;

CREATE OR REPLACE VIEW run_events AS
    SELECT trace_id, task_id, seq, "at" AS event_at, kind, name, status, detail
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
