-- Rows kept in the catalog to files, small adjacent files merged into larger
-- ones, and files whose rows were mostly deleted (replaced bundles) rewritten
-- without them.
CALL ducklake_flush_inlined_data('lake');
CALL ducklake_merge_adjacent_files('lake');
CALL ducklake_rewrite_data_files('lake');
