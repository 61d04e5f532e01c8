-- The policy row of a demand (?1) and the 'default' row, the demand's own first.
SELECT demand_id, CAST(config AS VARCHAR) AS config
FROM search_policy
WHERE demand_id = ? OR demand_id = 'default'
ORDER BY demand_id = 'default';
