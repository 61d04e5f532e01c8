-- A lake's snapshots as DuckLake reads them (the lake attached as ?1).
SELECT snapshot_id, snapshot_time, schema_version, changes, author, commit_message, commit_extra_info
FROM ducklake_snapshots(?1)
ORDER BY snapshot_id;
