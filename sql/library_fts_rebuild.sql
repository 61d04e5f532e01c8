-- BM25 index over every corpus's passages (title and passage text).
-- Tokens are runs of letters, digits and marks in any script: unlike DuckDB's
-- default this keeps digits ("PEP 8", "2024") and drops typographic quotes
-- and dashes. CJK text arrives already split into character bigrams.
PRAGMA create_fts_index(
    'library_passages', 'passage_id', 'title_terms', 'terms',
    stemmer = 'porter', stopwords = 'english', strip_accents = 1, lower = 1,
    ignore = '[^\p{L}\p{N}\p{M}]+',
    overwrite = 1
);
