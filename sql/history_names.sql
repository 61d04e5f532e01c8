-- The name of every table and view the catalog ever held, by id (its latest
-- name when it was renamed), from DuckLake's own metadata tables.
SELECT table_id, arg_max(table_name, begin_snapshot) FROM __ducklake_metadata_lake.ducklake_table GROUP BY table_id
UNION ALL
SELECT view_id, arg_max(view_name, begin_snapshot) FROM __ducklake_metadata_lake.ducklake_view GROUP BY view_id;
