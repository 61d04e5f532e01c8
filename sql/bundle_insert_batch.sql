-- bundle_insert for every bundle of a landing batch at once; `landing_bundles`
-- is an Arrow table that tasks/landing.py registers meanwhile.
INSERT INTO bundle_catalog BY NAME
SELECT *, now() AS landed_at FROM landing_bundles;
