-- The rows of a batch that its questions file no longer holds.
-- ?: batch_id, the task ids the batch holds now (a list)
DELETE FROM batch_questions WHERE batch_id = ? AND NOT list_contains(?, task_id);
