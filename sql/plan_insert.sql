INSERT INTO research_plans (task_id, run_id, created_at, question, planner, fallback_reason,
                            query_count, plan, raw_answer, plan_path)
VALUES ($task_id, $run_id, now(), $question, $planner, $fallback_reason,
        $query_count, $plan, $raw_answer, $plan_path);
