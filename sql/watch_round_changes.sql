-- What changed in one round of a topic: task_id, round.
SELECT kind, url, title, old_rank, new_rank, detail
FROM watch_change_log
WHERE task_id = ? AND round = ?
ORDER BY list_position(['source_added', 'source_dropped', 'source_moved', 'content_changed', 'insight_added',
                        'insight_removed', 'quote_added', 'quote_removed', 'answer_unchanged'], kind),
         coalesce(new_rank, old_rank), url, detail;
