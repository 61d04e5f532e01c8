-- The topic's (?) latest complete round before round ?.
SELECT max(round) FROM watch_round_log WHERE task_id = ? AND round < ? AND status = 'complete';
