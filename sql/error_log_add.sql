INSERT INTO error_log_entries (logged_at, task_id, query_id, provider, source_id, url, title,
                               error_code, http_status, captured_at, stage, message)
VALUES (now(), $task_id, NULL, $provider, NULL, $url, NULL, $error_code, NULL, NULL, $stage, $message);
