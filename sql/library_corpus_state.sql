-- Is corpus $1 indexed, and does the full-text index need a rebuild (any
-- corpus changed since, or the index was never built)?
SELECT
    EXISTS (SELECT 1 FROM library_corpora WHERE corpus = $1) AS indexed,
    EXISTS (SELECT 1 FROM library_corpora WHERE fts_stale)
        OR NOT EXISTS (SELECT 1 FROM duckdb_tables()
                       WHERE schema_name = 'fts_main_library_passages' AND table_name = 'dict') AS fts_stale;
