DELETE FROM pending_publish WHERE txn_id = ?;
