-- The runs in progress in this process are alive. ?: their trace ids
INSERT INTO run_heartbeat_log (trace_id, "at")
SELECT unnest(?::VARCHAR[]), now();
