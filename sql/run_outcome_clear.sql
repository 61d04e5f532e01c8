-- Forget a run's outcome before recording it again (a retried record
-- replaces, never doubles). The trace id is the session variable outcome_trace_id.
DELETE FROM selection_log WHERE trace_id = getvariable('outcome_trace_id');
DELETE FROM drop_log WHERE trace_id = getvariable('outcome_trace_id');
DELETE FROM publisher_log WHERE trace_id = getvariable('outcome_trace_id');
DELETE FROM publisher_source_log WHERE trace_id = getvariable('outcome_trace_id');
