-- A round's sources and the insights of its report: task_id, round, task_id, round.
SELECT (SELECT count(*) FROM watch_round_sources WHERE task_id = ? AND round = ?),
       (SELECT count(DISTINCT insight) FROM watch_round_answers WHERE task_id = ? AND round = ? AND section = 'insight');
