-- One row per question of a batch with its answer so far (see
-- schema_70_batch.sql): status is the latest run's status ('pending' before
-- any), answered says the task has a report; first_insight, citation_count
-- and the top source come from that report and the run that wrote it.
CREATE OR REPLACE VIEW batch_answers AS
    WITH latest_run AS (
        SELECT task_id, status, elapsed_seconds,
               row_number() OVER (PARTITION BY task_id ORDER BY started_at DESC) AS newest
        FROM runs  -- as judged there: a run whose process died is interrupted
    )
    SELECT b.batch_id, b."row", b.question, b.task_id,
           coalesce(r.status, 'pending') AS status,
           rep.task_id IS NOT NULL AS answered,
           rep.first_insight, rep.citation_count,
           top.url AS top_source_url, top.title AS top_source_title,
           r.elapsed_seconds, b.params
    FROM batch_questions b
    LEFT JOIN latest_run r ON r.task_id = b.task_id AND r.newest = 1
    LEFT JOIN report_catalog rep ON rep.task_id = b.task_id
    LEFT JOIN selection_log top ON top.task_id = b.task_id AND top.trace_id = rep.flow_run_id AND top.rank = 1;
