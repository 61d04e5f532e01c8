-- The SQL surface of `searchlake ask`.
CREATE OR REPLACE VIEW ask_messages AS
    SELECT * FROM ask_message_log;

CREATE OR REPLACE VIEW citations AS
    SELECT citation_id, message_id, task_id, position, url, title, content,
           start_index, end_index, domain, fetched_at
    FROM ask_citation_log;

CREATE OR REPLACE VIEW review_queue AS
    SELECT message_id, task_id, reason, created_at, raw_response
    FROM ask_review_log;
