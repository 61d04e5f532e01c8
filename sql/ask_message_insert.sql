INSERT INTO ask_message_log (
    message_id, task_id, query_id, question, answer, model, engine, search_mode,
    search_context_size, max_results, request_count, citation_count, no_citations,
    cost, max_cost, prompt_tokens, completion_tokens, web_search_requests, duration_ms,
    http_status, status, failure_reason, attempts, raw_path, created_at)
VALUES ($message_id, $task_id, $query_id, $question, $answer, $model, $engine, $search_mode,
        $search_context_size, $max_results, $request_count, $citation_count, $no_citations,
        $cost, $max_cost, $prompt_tokens, $completion_tokens, $web_search_requests, $duration_ms,
        $http_status, $status, $failure_reason, $attempts, $raw_path, $created_at);
