-- A lake's tables and views (the lake attached as ?1), with a view's text.
SELECT schema_name, table_name, 'table', NULL FROM duckdb_tables() WHERE database_name = ?1
UNION ALL
SELECT schema_name, view_name, 'view', sql FROM duckdb_views() WHERE database_name = ?1 AND NOT internal
ORDER BY ALL;
