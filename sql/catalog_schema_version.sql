-- The version of the catalog's schema (its tables, views and macros) at the
-- snapshot the session reads: inside a transaction, the transaction's.
SELECT s.schema_version
FROM lake.current_snapshot() AS c
JOIN __ducklake_metadata_lake.ducklake_snapshot AS s ON s.snapshot_id = c.id;
