DROP TABLE IF EXISTS new_items; DROP TABLE IF EXISTS consolidated_old;
