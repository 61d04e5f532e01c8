SELECT txn_id, plan FROM pending_publish ORDER BY created_at;
