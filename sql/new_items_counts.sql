SELECT count(*), count(DISTINCT bundle_uid), count(*) FILTER (status = 'failed') FROM new_items;
