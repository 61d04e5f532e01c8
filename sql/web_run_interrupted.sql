-- Why a run reads interrupted (its process died: see the runs view), or no
-- row while it does not. $1: its trace id
SELECT error FROM runs WHERE trace_id = $1 AND status = 'interrupted';
