-- Files no snapshot knows (a writer killed before its commit left them), once
-- they are an hour old: younger ones may belong to a commit in flight.
CALL ducklake_delete_orphaned_files('lake', older_than => now() - INTERVAL 1 HOUR);
