-- Items of the bundles landed since the cursor's high-water mark, in reading
-- order: query_id ascending (natural order), then score_final descending,
-- rank, source_id, and the item's position in its bundle.
-- Only the columns that decide the reading order, the counts and the cursor
-- are kept, with where each item lives (file_index in `new_files`,
-- file_row_number): the wide columns are read for the rows that need them.
-- query_order numbers the queries read in natural order (1, 2, ...).
CREATE OR REPLACE TEMP TABLE new_items AS
WITH items AS (
    SELECT r.file_index, r.file_row_number, r.bundle_uid, r.query_id, r.query_sort_key, r.source_id,
           r.score_final, r.rank, r.item_index, r.status
    FROM read_parquet(getvariable('new_files'), file_row_number = true) AS r
    WHERE r.status <> 'filtered'
      AND r.bundle_uid IN (
          SELECT bundle_uid FROM bundle_catalog
          WHERE task_id = getvariable('task_id') AND landing_seq > getvariable('from_seq'))
),
queries AS (
    SELECT query_id, row_number() OVER (ORDER BY query_sort_key, query_id) AS query_order
    FROM (SELECT DISTINCT query_id, query_sort_key FROM items)
)
SELECT items.*, queries.query_order FROM items JOIN queries USING (query_id);
