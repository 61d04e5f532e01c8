-- The sources the task's latest complete governed run selected, in rank order.
SELECT source_id FROM selection_log
WHERE trace_id = (SELECT trace_id FROM run_log WHERE task_id = $1 AND status = 'complete'
                  ORDER BY finished_at DESC LIMIT 1)
ORDER BY rank;
