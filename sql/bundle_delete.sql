-- A replaced bundle (?); bundle_items_delete drops its items.
DELETE FROM bundle_catalog WHERE bundle_uid = ?;
