DELETE FROM results WHERE bundle_uid = ?;
