-- What changed in a topic (?) since a moment (?), round by round.
SELECT round, changed_at, kind, url, title, old_rank, new_rank, detail
FROM changes
WHERE topic = ? AND changed_at >= ?
ORDER BY round,
         list_position(['source_added', 'source_dropped', 'source_moved', 'content_changed', 'insight_added',
                        'insight_removed', 'quote_added', 'quote_removed', 'answer_unchanged'], kind),
         coalesce(new_rank, old_rank), url, detail;
