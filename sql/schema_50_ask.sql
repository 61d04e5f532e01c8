-- Single-shot "search + summary" (tasks/ask.py): every OpenRouter call, the
-- citations of its answer, and answers without citations awaiting review.
-- No column ever holds an API key. Idempotent.
CREATE TABLE IF NOT EXISTS ask_message_log (
    message_id          VARCHAR NOT NULL,
    task_id             VARCHAR NOT NULL,
    query_id            VARCHAR NOT NULL,     -- of the landed bundle (bundles.query_id)
    question            VARCHAR NOT NULL,
    answer              VARCHAR,
    model               VARCHAR NOT NULL,
    engine              VARCHAR NOT NULL,     -- auto | native | exa, as requested
    search_mode         VARCHAR NOT NULL,     -- plugin | server_tool
    search_context_size VARCHAR NOT NULL,     -- low | medium | high
    max_results         INTEGER NOT NULL,
    request_count       INTEGER NOT NULL,     -- 1, or 2 after the one retry
    citation_count      INTEGER NOT NULL,
    no_citations        BOOLEAN NOT NULL,
    cost                DOUBLE,               -- usage.cost, USD
    max_cost            DOUBLE,               -- the cap in force
    prompt_tokens       INTEGER,
    completion_tokens   INTEGER,
    web_search_requests INTEGER,              -- usage.server_tool_use.web_search_requests
    duration_ms         BIGINT,
    http_status         INTEGER,              -- of the last request
    status              VARCHAR NOT NULL,     -- ok | failed | over_budget
    failure_reason      VARCHAR,
    attempts            JSON,                 -- [{status, error, retry_after, duration_ms}]
    raw_path            VARCHAR,              -- lake key of the response JSON
    created_at          TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS ask_citation_log (
    citation_id VARCHAR NOT NULL,
    message_id  VARCHAR NOT NULL,             -- ask_message_log.message_id
    task_id     VARCHAR NOT NULL,
    position    INTEGER NOT NULL,             -- order in the annotations
    url         VARCHAR NOT NULL,
    title       VARCHAR,
    content     VARCHAR,
    start_index INTEGER,
    end_index   INTEGER,
    domain      VARCHAR,
    fetched_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS ask_review_log (
    message_id   VARCHAR NOT NULL,
    task_id      VARCHAR NOT NULL,
    reason       VARCHAR NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    raw_response JSON                        -- as received, secrets scrubbed
);
