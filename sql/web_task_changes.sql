-- What changed in a watched topic ($1), the latest rounds first (at most $2 rows).
SELECT round, changed_at, kind, url, title, old_rank, new_rank, detail
FROM changes
WHERE topic = $1
ORDER BY round DESC,
         list_position(['source_added', 'source_dropped', 'source_moved', 'content_changed', 'insight_added',
                        'insight_removed', 'quote_added', 'quote_removed', 'answer_unchanged'], kind),
         coalesce(new_rank, old_rank), url, detail
LIMIT $2;
