-- Rows kept in the catalog (small commits) written out to table files.
CALL ducklake_flush_inlined_data('lake');
