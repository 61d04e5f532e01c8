-- A round ends: status, error, task_id, round.
UPDATE watch_round_log SET finished_at = now(), status = ?, error = ?
WHERE task_id = ? AND round = ?;
