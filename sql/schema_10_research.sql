-- Research plans, one row per run that planned; the raw LLM answer is kept
-- for debugging (the planner's prompt never holds a secret).
CREATE TABLE IF NOT EXISTS research_plans (
    task_id         VARCHAR NOT NULL,
    run_id          VARCHAR NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    question        VARCHAR NOT NULL,
    planner         VARCHAR NOT NULL,
    fallback_reason VARCHAR,
    query_count     INTEGER NOT NULL,
    plan            JSON NOT NULL,
    raw_answer      VARCHAR,
    plan_path       VARCHAR
);
