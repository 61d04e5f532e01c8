-- A task's single-shot answers, newest first.
SELECT message_id, question, answer, model, status, failure_reason, citation_count, no_citations, created_at
FROM ask_messages
WHERE task_id = $1
ORDER BY created_at DESC;
