-- The last snapshot in which a bundle of the task (?) landed, and how many landed.
SELECT coalesce(max(snapshot_id), 0), count(*) FROM bundle_catalog WHERE task_id = ?;
