-- The lake's snapshots, newest first: who committed each, what it says it
-- did, and what it changed (tables by id, created ones by name).
-- $1: a task id, or NULL for every snapshot (a commit names its tasks in its
-- extra info: {"tasks": [...]}); $2: how many. The heartbeats of runs in
-- progress (tasks/governance/heartbeat.py) say only that a process was alive:
-- they are left out.
SELECT snapshot_id, snapshot_time, author, commit_message, changes
FROM lake.snapshots()
WHERE coalesce(commit_message, '') NOT LIKE 'heartbeat:%'
  AND ($1::VARCHAR IS NULL
       OR CASE WHEN json_valid(commit_extra_info)
               THEN list_contains(from_json(json_extract(commit_extra_info, '$.tasks'), '["VARCHAR"]'), $1)
          END)
ORDER BY snapshot_id DESC
LIMIT $2;
