-- The landed bundles of every (task_id, query_id) of a landing batch at once,
-- first landed first; `landing_keys` is an Arrow table that tasks/landing.py
-- registers meanwhile.
SELECT k.task_id, k.query_id, b.bundle_uid, b.content_hash, b.raw_path, b.snapshot_id
FROM landing_keys AS k JOIN bundle_catalog AS b USING (task_id, query_id)
ORDER BY k.task_id, k.query_id, b.snapshot_id, b.bundle_uid;
