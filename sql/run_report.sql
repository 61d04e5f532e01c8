-- The report a run published (its flow run's), its last step: the lake keys
-- of its md, html and json. ?: the run's flow run id
SELECT md_path, html_path, json_path
FROM report_catalog
WHERE flow_run_id = ?
ORDER BY generated_at DESC
LIMIT 1;
