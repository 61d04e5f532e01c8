DELETE FROM bundle_catalog WHERE bundle_uid = ?;
