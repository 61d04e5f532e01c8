-- A question of a batch, unless the batch already holds it.
-- ?: batch_id, row, question, task_id, params, then batch_id, task_id again
INSERT INTO batch_questions (batch_id, "row", question, task_id, params, added_at)
SELECT ?, ?, ?, ?, ?, now()
WHERE NOT EXISTS (SELECT 1 FROM batch_questions WHERE batch_id = ? AND task_id = ?);
