-- A governed run ends.
UPDATE run_log
SET status = $status, candidate_count = $candidate_count, filtered_count = $filtered_count,
    publisher_count = $publisher_count, elapsed_seconds = $elapsed_seconds, stage_history = $stage_history,
    outputs = $outputs, error = $error, finished_at = now()
WHERE trace_id = $trace_id;
