INSERT INTO ask_citation_log (
    citation_id, message_id, task_id, position, url, title, content,
    start_index, end_index, domain, fetched_at)
VALUES ($citation_id, $message_id, $task_id, $position, $url, $title, $content,
        $start_index, $end_index, $domain, $fetched_at);
