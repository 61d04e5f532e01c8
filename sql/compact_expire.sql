-- Snapshots older than the retention (days) stop being reachable by time travel.
CALL ducklake_expire_snapshots('lake', older_than => now() - to_seconds(getvariable('keep_days') * 86400));
