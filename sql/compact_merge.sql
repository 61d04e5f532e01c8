-- Inlined rows to files, then small adjacent files merged into larger ones.
CALL ducklake_flush_inlined_data('lake');
CALL ducklake_merge_adjacent_files('lake');
