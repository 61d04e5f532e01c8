INSERT INTO pending_publish (txn_id, plan, created_at) VALUES (?, ?, now());
