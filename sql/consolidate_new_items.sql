-- Items of the bundles landed since the cursor's high-water mark, in reading
-- order: query_id ascending (natural order), then score_final descending,
-- rank, source_id, and the item's position in its bundle.
CREATE OR REPLACE TEMP TABLE new_items AS
SELECT r.*
FROM read_parquet(getvariable('new_files')) AS r
WHERE r.status <> 'filtered'
  AND r.bundle_uid IN (
      SELECT bundle_uid FROM bundle_catalog
      WHERE task_id = getvariable('task_id') AND landing_seq > getvariable('from_seq'));
