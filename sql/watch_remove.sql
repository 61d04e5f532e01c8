-- A watch is removed, its row (and its rounds) kept.
UPDATE watch_log SET removed_at = now() WHERE name = ? AND removed_at IS NULL;
