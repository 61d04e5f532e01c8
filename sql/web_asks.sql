-- The page's list of single-shot answers, newest first.
SELECT message_id, task_id, question, status, citation_count, no_citations, created_at
FROM ask_messages
ORDER BY created_at DESC
LIMIT $1;
