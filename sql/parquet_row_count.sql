SELECT count(*) FROM read_parquet(?);
