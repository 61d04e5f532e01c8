-- What the catalog defines in the lake's `main` schema at one snapshot: its
-- views and macros (with the text DuckLake keeps of them) and its tables,
-- read from DuckLake's own metadata tables. The catalog writes a view's own
-- catalog as {DUCKLAKE_CATALOG}: here it is `lake`. ?: the snapshot id
WITH alive AS (
    SELECT schema_id FROM __ducklake_metadata_lake.ducklake_schema
    WHERE schema_name = 'main' AND begin_snapshot <= $1 AND (end_snapshot IS NULL OR end_snapshot > $1)
)
SELECT 'view' AS kind, view_name AS name,
       replace(sql, '{DUCKLAKE_CATALOG}', 'lake') || coalesce(' ALIASES ' || nullif(column_aliases, ''), '') AS body
FROM __ducklake_metadata_lake.ducklake_view
WHERE schema_id IN (SELECT schema_id FROM alive) AND begin_snapshot <= $1 AND (end_snapshot IS NULL OR end_snapshot > $1)
UNION ALL
SELECT 'macro', m.macro_name,
       i.type || ' ' || i.sql || coalesce(' PARAMETERS ' || (
           SELECT string_agg(p.parameter_name || '=' || coalesce(p.default_value, ''), ', ' ORDER BY p.column_id)
           FROM __ducklake_metadata_lake.ducklake_macro_parameters AS p
           WHERE p.macro_id = i.macro_id AND p.impl_id = i.impl_id), '')
FROM __ducklake_metadata_lake.ducklake_macro AS m
JOIN __ducklake_metadata_lake.ducklake_macro_impl AS i USING (macro_id)
WHERE m.schema_id IN (SELECT schema_id FROM alive) AND m.begin_snapshot <= $1
  AND (m.end_snapshot IS NULL OR m.end_snapshot > $1)
UNION ALL
SELECT 'table', table_name, NULL
FROM __ducklake_metadata_lake.ducklake_table
WHERE schema_id IN (SELECT schema_id FROM alive) AND begin_snapshot <= $1 AND (end_snapshot IS NULL OR end_snapshot > $1);
