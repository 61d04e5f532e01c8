-- The tables of an attached database (?1) with their columns and column
-- types, in column order: DuckLake's own metadata tables when the database
-- is a catalog attached as a plain database.
SELECT table_name, list(column_name ORDER BY column_index), list(data_type ORDER BY column_index)
FROM duckdb_columns()
WHERE database_name = ?1 AND schema_name = 'main'
GROUP BY table_name
ORDER BY table_name;
