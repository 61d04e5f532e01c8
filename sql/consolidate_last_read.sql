-- The last item in reading order: where the cursor stands.
SELECT query_id, source_id FROM new_items
ORDER BY query_sort_key DESC, query_id DESC, score_final ASC, rank DESC NULLS FIRST,
         source_id DESC, item_index DESC
LIMIT 1;
