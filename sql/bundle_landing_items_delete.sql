DELETE FROM results WHERE bundle_uid = $1 AND snapshot_id = $2;
