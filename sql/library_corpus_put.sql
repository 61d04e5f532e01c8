-- $1 corpus, $2 root, $3 changed (marks the full-text index stale), $4 indexed_at
INSERT INTO library_corpora (corpus, root, doc_count, passage_count, indexed_at, fts_stale)
VALUES ($1, $2,
        (SELECT count(*) FROM library_documents WHERE corpus = $1),
        (SELECT count(*) FROM library_passages WHERE corpus = $1),
        $4, $3)
ON CONFLICT (corpus) DO UPDATE SET
    root = excluded.root,
    doc_count = excluded.doc_count,
    passage_count = excluded.passage_count,
    indexed_at = excluded.indexed_at,
    fts_stale = library_corpora.fts_stale OR excluded.fts_stale;
