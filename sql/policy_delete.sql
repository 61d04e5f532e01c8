DELETE FROM search_policy WHERE demand_id = ?;
