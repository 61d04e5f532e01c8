-- The governed search pipeline (docs/research.md): per-demand search policies and
-- the record of every governed run. Tables carry a _log/_table suffix so that
-- the analysts' names (runs, run_events, selections, drops, publishers,
-- publisher_sources) can be views (views_60_governance.sql). Idempotent.

-- One policy per demand id; the row 'default' serves every demand without
-- its own. config is a JSON object of Policy fields (schemas/governance.py).
CREATE TABLE IF NOT EXISTS search_policy (
    demand_id  VARCHAR NOT NULL,     -- one row per demand
    config     JSON NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- The built-in defaults (schemas.governance.Policy), inserted only when the
-- row is missing so an edited default is never overwritten.
-- tests/test_policy.py checks that these values equal Policy().
INSERT INTO search_policy (demand_id, config, updated_at)
SELECT 'default',
       '{"max_keywords": 6, "min_candidate_multiplier": 2.0, "near_enough_candidate_multiplier": 1.2, "filter_near_ratio": 0.8, "max_detail_fetch": 30, "enable_llm_review": true}',
       now()
WHERE NOT EXISTS (SELECT 1 FROM search_policy WHERE demand_id = 'default');

-- One row per governed run, inserted 'running' and updated at the end.
CREATE TABLE IF NOT EXISTS run_log (
    trace_id        VARCHAR NOT NULL,
    task_id         VARCHAR NOT NULL,
    question        VARCHAR NOT NULL,
    demand_id       VARCHAR,
    policy_source   VARCHAR,              -- db | default | default(fallback)
    status          VARCHAR NOT NULL,     -- running | complete | failed | timed_out | interrupted
    candidate_count INTEGER,
    filtered_count  INTEGER,
    publisher_count INTEGER,
    elapsed_seconds DOUBLE,
    stage_history   JSON,                 -- [{name, status, attempt, started_at, seconds, detail}]
    outputs         JSON,                 -- {name: lake key or value}
    budget          JSON,                 -- {timeout_seconds, max_target_count, max_fallback_rounds}
    policy          JSON,                 -- the Policy in force
    error           VARCHAR,
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ
);
-- The process that runs it, so that a later process can tell it died
-- (status 'interrupted'; see tasks/governance/runs.py, close_dead_runs). Added
-- to catalogs made before them; runs recorded before them have none.
ALTER TABLE run_log ADD COLUMN IF NOT EXISTS host VARCHAR;
ALTER TABLE run_log ADD COLUMN IF NOT EXISTS pid INTEGER;
ALTER TABLE run_log ADD COLUMN IF NOT EXISTS process_started VARCHAR;  -- when the pid's process started
-- The Prefect flow run that ran it (its trace_id, for runs of the research
-- flow; NULL for a run outside Prefect). Added to catalogs made before it.
ALTER TABLE run_log ADD COLUMN IF NOT EXISTS flow_run_id VARCHAR;
-- How long the run may go without a sign of life (its start, a heartbeat)
-- before readers take it for interrupted: its process would have beaten by
-- then (tasks/governance/heartbeat.py). NULL for runs recorded before it:
-- only their closing row ends them. Added to catalogs made before it.
ALTER TABLE run_log ADD COLUMN IF NOT EXISTS lease_seconds DOUBLE;

-- A run in progress says it is alive: one row per run and heartbeat, never
-- updated (inserts never conflict with another writer's; the runs view
-- keeps each run's latest).
CREATE TABLE IF NOT EXISTS run_heartbeat_log (
    trace_id VARCHAR NOT NULL,
    "at"     TIMESTAMPTZ NOT NULL
);

-- Every stage/gate/run event, as also appended to the run's trace.jsonl.
CREATE TABLE IF NOT EXISTS run_event_log (
    trace_id VARCHAR NOT NULL,
    task_id  VARCHAR NOT NULL,
    seq      INTEGER NOT NULL,
    "at"     TIMESTAMPTZ NOT NULL,    -- quoted: AT is a keyword
    kind     VARCHAR NOT NULL,            -- stage | gate | run
    name     VARCHAR NOT NULL,
    status   VARCHAR NOT NULL,
    detail   JSON
);

-- The sources a run selected, best first.
CREATE TABLE IF NOT EXISTS selection_log (
    trace_id  VARCHAR NOT NULL,
    task_id   VARCHAR NOT NULL,
    source_id VARCHAR,
    url       VARCHAR,
    title     VARCHAR,
    quality   DOUBLE,
    rank      INTEGER NOT NULL
);

-- Every candidate a stage removed, and why.
CREATE TABLE IF NOT EXISTS drop_log (
    trace_id  VARCHAR NOT NULL,
    task_id   VARCHAR NOT NULL,
    source_id VARCHAR,
    url       VARCHAR,
    title     VARCHAR,
    stage     VARCHAR NOT NULL,
    reason    VARCHAR NOT NULL
);

-- Who published the selected sources (host without "www."; "local library").
CREATE TABLE IF NOT EXISTS publisher_log (
    trace_id      VARCHAR NOT NULL,
    task_id       VARCHAR NOT NULL,
    publisher     VARCHAR NOT NULL,
    article_count INTEGER NOT NULL,
    sample_titles JSON,
    source_urls   JSON
);

CREATE TABLE IF NOT EXISTS publisher_source_log (
    trace_id  VARCHAR NOT NULL,
    task_id   VARCHAR NOT NULL,
    publisher VARCHAR NOT NULL,
    source_id VARCHAR NOT NULL
);
