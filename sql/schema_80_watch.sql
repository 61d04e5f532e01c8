-- Watches: the same question researched again every interval, each round
-- landing into the watch's task (its topic). Idempotent.

-- One row per watch ever added; a removed watch keeps its row (removed_at)
-- and its rounds. params: the research options of every round (library,
-- providers, target, ...), a JSON object.
CREATE TABLE IF NOT EXISTS watch_log (
    name             VARCHAR NOT NULL,
    question         VARCHAR NOT NULL,
    task_id          VARCHAR NOT NULL,     -- the topic every round lands into
    interval_seconds BIGINT NOT NULL,
    params           JSON NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    removed_at       TIMESTAMPTZ,
    deployment_id    VARCHAR               -- the Prefect deployment that schedules its rounds
);

-- One row per round, inserted 'running' and updated when it ends.
CREATE TABLE IF NOT EXISTS watch_round_log (
    task_id     VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    round       INTEGER NOT NULL,
    run_id      VARCHAR,                   -- the Prefect flow run of the round
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    status      VARCHAR NOT NULL,          -- running | complete | failed
    error       VARCHAR
);

-- What a round found, kept per round: `consolidated` holds only the latest
-- round of a topic, and snapshots expire (searchlake compact), so the rounds
-- are compared on these copies. content_hash: md5 of the source's stored text.
CREATE TABLE IF NOT EXISTS watch_round_sources (
    task_id      VARCHAR NOT NULL,
    round        INTEGER NOT NULL,
    source_id    VARCHAR NOT NULL,
    url          VARCHAR,
    title        VARCHAR,
    final_rank   BIGINT,
    content_hash VARCHAR
);

-- The round's answer: every quote of its report, with the insight it backs
-- (insight: the insight's text, for the section 'insight').
CREATE TABLE IF NOT EXISTS watch_round_answers (
    task_id    VARCHAR NOT NULL,
    round      INTEGER NOT NULL,
    section    VARCHAR NOT NULL,
    item_index INTEGER NOT NULL,
    insight    VARCHAR,
    source_id  VARCHAR,
    url        VARCHAR,
    title      VARCHAR,
    quote      VARCHAR,
    verified   BOOLEAN
);

-- What changed in a round since the topic's previous complete round.
CREATE TABLE IF NOT EXISTS watch_change_log (
    task_id   VARCHAR NOT NULL,
    round     INTEGER NOT NULL,
    "at"      TIMESTAMPTZ NOT NULL,        -- quoted: AT is a keyword
    kind      VARCHAR NOT NULL,
    source_id VARCHAR,
    url       VARCHAR,
    title     VARCHAR,
    old_rank  BIGINT,
    new_rank  BIGINT,
    detail    VARCHAR
);
