-- A governed run ends. ?: status, candidate_count, filtered_count,
-- publisher_count, elapsed_seconds, stage_history, outputs, error, trace_id
UPDATE run_log
SET status = ?, candidate_count = ?, filtered_count = ?, publisher_count = ?,
    elapsed_seconds = ?, stage_history = ?, outputs = ?, error = ?, finished_at = now()
WHERE trace_id = ?;
