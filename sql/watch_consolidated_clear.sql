-- A new round of a watch starts its topic's consolidated output afresh (the
-- cursor is moved past what earlier rounds landed): the round's ranking is its own.
DELETE FROM consolidated WHERE task_id = ?;
