-- The task's previous output goes (whole files: the task's rows are files of their own).
DELETE FROM consolidated
WHERE task_id = getvariable('task_id') AND rowid IN (SELECT row_id FROM consolidated_old);
