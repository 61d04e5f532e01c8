-- The items of a landing batch; `landing_items` is an Arrow table that
-- tasks/landing.py registers meanwhile.
INSERT INTO results BY NAME SELECT * FROM landing_items;
