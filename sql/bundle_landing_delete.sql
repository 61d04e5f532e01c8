-- One landing of a bundle (bundle_uid ?1, landed in snapshot ?2) and its
-- items: identical bundles landed twice share their uid, not their snapshot.
DELETE FROM bundle_catalog WHERE bundle_uid = $1 AND snapshot_id = $2;
