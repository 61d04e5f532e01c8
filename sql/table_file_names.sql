-- Every file name DuckLake knows of, current or kept for time travel or
-- waiting to be deleted (names are unique: ducklake-<uuid>.parquet).
SELECT parse_filename(path) FROM __ducklake_metadata_lake.ducklake_data_file
UNION SELECT parse_filename(path) FROM __ducklake_metadata_lake.ducklake_delete_file
UNION SELECT parse_filename(path) FROM __ducklake_metadata_lake.ducklake_files_scheduled_for_deletion;
