SELECT * FROM read_parquet(getvariable('compact_files'))
ORDER BY query_sort_key, query_id, item_index;
