-- Insert or replace the policy of one demand.
INSERT INTO search_policy (demand_id, config, updated_at)
VALUES (?, ?, now())
ON CONFLICT (demand_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at;
