-- Whether the lake holds anything of a task: a bundle or a run. $1: task id.
SELECT EXISTS (SELECT 1 FROM bundle_catalog WHERE task_id = $1)
    OR EXISTS (SELECT 1 FROM run_log WHERE task_id = $1);
