-- Every definition the catalog holds of a view, current and past (time
-- travel reads a past one), from DuckLake's own metadata table, which writes
-- the view's own catalog as {DUCKLAKE_CATALOG}: here it is `lake`.
SELECT DISTINCT view_name, replace(sql, '{DUCKLAKE_CATALOG}', 'lake')
FROM __ducklake_metadata_lake.ducklake_view;
