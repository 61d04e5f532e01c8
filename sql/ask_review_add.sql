INSERT INTO ask_review_log (message_id, task_id, reason, created_at, raw_response)
VALUES (?, ?, ?, ?, ?);
