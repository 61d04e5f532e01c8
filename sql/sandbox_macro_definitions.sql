-- Every definition the catalog holds of the named macros, current and past
-- (time travel reads a past one), with its kind (scalar or table), from
-- DuckLake's own metadata tables. ?: the macro names
SELECT DISTINCT m.macro_name, i.sql, i.type
FROM __ducklake_metadata_lake.ducklake_macro AS m
JOIN __ducklake_metadata_lake.ducklake_macro_impl AS i USING (macro_id)
WHERE list_contains(?::VARCHAR[], m.macro_name);
