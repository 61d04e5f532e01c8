-- The new policy of one demand (policy_delete removed the old one first).
INSERT INTO search_policy (demand_id, config, updated_at) VALUES (?, ?, now());
