INSERT INTO quarantine_log (quarantined_at, source_path, stored_path, sha256, task_id, query_id,
                            reason, field, item_index, message, errors, size_bytes)
VALUES (now(), $source_path, $stored_path, $sha256, $task_id, $query_id,
        $reason, $field, $item_index, $message, $errors, $size_bytes);
