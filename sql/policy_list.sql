-- Every stored policy, 'default' first.
SELECT demand_id, CAST(config AS VARCHAR) AS config, updated_at
FROM search_policy
ORDER BY demand_id <> 'default', demand_id;
