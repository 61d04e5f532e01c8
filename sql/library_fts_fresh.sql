UPDATE library_corpora SET fts_stale = false WHERE fts_stale;
