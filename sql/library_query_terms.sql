-- The query $1 (in index form) as the index sees it: its distinct stemmed
-- terms (stopwords dropped) and each term's BM25 idf, computed exactly as
-- match_bm25 does (a term no passage holds gets the largest idf, df = 0).
WITH raw AS (
    SELECT unnest(fts_main_library_passages.tokenize($1)) AS token
), terms AS (
    SELECT DISTINCT stem(token, 'porter') AS term
    FROM raw
    WHERE token <> '' AND token NOT IN (SELECT sw FROM fts_main_library_passages.stopwords)
)
SELECT terms.term,
       log(((stats.num_docs - coalesce(dict.df, 0)) + 0.5) / (coalesce(dict.df, 0) + 0.5) + 1) AS idf
FROM terms
CROSS JOIN fts_main_library_passages.stats AS stats
LEFT JOIN fts_main_library_passages.dict AS dict ON dict.term = terms.term
ORDER BY terms.term;
