CREATE OR REPLACE VIEW plans AS
    SELECT task_id, run_id, created_at, question, planner, fallback_reason, query_count, plan, raw_answer, plan_path
    FROM research_plans;
