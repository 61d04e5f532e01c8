-- Batches: a list of questions researched as one job (`searchlake research
-- --questions FILE`), one research task per question. A question's task id
-- is derived from the batch and its row, so running the batch again finds
-- the same tasks (answered ones are skipped, the others resume). Rows of a
-- batch are replaced when the batch runs again with other questions.
CREATE TABLE IF NOT EXISTS batch_questions (
    batch_id VARCHAR NOT NULL,
    "row"    INTEGER NOT NULL,        -- the line of the file the question starts on
    question VARCHAR NOT NULL,
    task_id  VARCHAR NOT NULL,        -- the research task answering it
    params   JSON,                    -- {library, providers, target} asked for this row
    added_at TIMESTAMPTZ NOT NULL
);
