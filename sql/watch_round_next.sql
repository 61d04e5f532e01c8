-- The number of the topic's (?) next round.
SELECT coalesce(max(round), 0) + 1 FROM watch_round_log WHERE task_id = ?;
