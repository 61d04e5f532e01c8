-- Items of the task's bundles landed after the cursor's snapshot, in reading
-- order: query_id ascending (natural order), then score_final descending,
-- rank, source_id, and the item's position in its bundle. Items carry the
-- snapshot their bundle landed in (rows are only ever inserted with their
-- bundle, or deleted with it when it is replaced).
-- Only the columns that decide the reading order, the counts and the cursor
-- are kept, with the row's id: the wide columns are read for the rows that
-- need them. query_order numbers the queries read in natural order (1, 2, ...).
CREATE OR REPLACE TEMP TABLE new_items AS
WITH items AS (
    SELECT r.rowid AS row_id, r.bundle_uid, r.query_id, r.query_sort_key, r.source_id,
           r.score_final, r.rank, r.item_index, r.status
    FROM results AS r
    WHERE r.task_id = getvariable('task_id') AND r.snapshot_id > getvariable('from_snapshot')
      AND r.status <> 'filtered'
),
queries AS (
    SELECT query_id, row_number() OVER (ORDER BY query_sort_key, query_id) AS query_order
    FROM (SELECT DISTINCT query_id, query_sort_key FROM items)
)
SELECT items.*, queries.query_order FROM items JOIN queries USING (query_id);
