-- Files no remaining snapshot reads, deleted.
CALL ducklake_cleanup_old_files('lake', cleanup_all => true);
