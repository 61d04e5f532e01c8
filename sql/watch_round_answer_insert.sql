-- One quote (or uncited insight) of the round's report: task_id, round,
-- section, item_index, insight, source_id, url, title, quote, verified.
INSERT INTO watch_round_answers (task_id, round, section, item_index, insight, source_id, url, title, quote, verified)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
