-- The task's current output rows, to be replaced by the new ones.
CREATE OR REPLACE TEMP TABLE consolidated_old AS
SELECT rowid AS row_id FROM consolidated WHERE task_id = getvariable('task_id');
