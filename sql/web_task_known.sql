-- Whether a task left anything a page can show.
SELECT (SELECT count(*) FROM bundles WHERE task_id = $1)
     + (SELECT count(*) FROM runs WHERE task_id = $1)
     + (SELECT count(*) FROM ask_messages WHERE task_id = $1);
