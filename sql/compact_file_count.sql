-- The data files the current snapshot reads, over every table (DuckLake's
-- own metadata table, attached beside the lake).
SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file WHERE end_snapshot IS NULL;
