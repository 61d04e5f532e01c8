SELECT plan FROM research_plans WHERE task_id = ? ORDER BY created_at DESC LIMIT 1;
