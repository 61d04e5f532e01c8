-- What the transaction in progress did, kept with its snapshot (DuckLake's
-- snapshots(): author, commit_message, commit_extra_info).
-- ?: author, message, extra info (JSON: {"tasks": [...]}, or NULL)
CALL lake.set_commit_message(?, ?, extra_info => ?);
