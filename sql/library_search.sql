-- The best documents of corpus $1 for the query $2 (in index form): a document
-- scores as its best passage (BM25, k1 = 1.2, b = 0.75, any query term).
-- $3 max documents, $4 max characters of document text returned.
WITH scored AS (
    SELECT p.path, p.passage_no, p.char_start, p.char_len,
           fts_main_library_passages.match_bm25(p.passage_id, $2, k := 1.2, b := 0.75) AS score
    FROM library_passages AS p
    WHERE p.corpus = $1
), best AS (
    SELECT path, max(score) AS score, arg_max(passage_no, score) AS passage_no
    FROM scored
    WHERE score IS NOT NULL
    GROUP BY path
    ORDER BY score DESC, path
    LIMIT $3  -- before the join, so only these documents' texts are read
)
SELECT d.path, d.url, d.title, d.kind, d.mtime, best.score, best.passage_no, p.passage_id,
       substr(d.text, p.char_start + 1, p.char_len) AS passage,
       left(d.text, $4) AS content_text,
       length(d.text) AS text_chars
FROM best
JOIN library_documents AS d ON d.corpus = $1 AND d.path = best.path
JOIN library_passages AS p ON p.corpus = $1 AND p.path = best.path AND p.passage_no = best.passage_no
ORDER BY best.score DESC, d.path;
