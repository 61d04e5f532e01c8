-- Published reports, one row per task (see schema_40_reports.sql).
CREATE OR REPLACE TEMP VIEW reports AS
    SELECT task_id, generated_at, question, language, synthesizer, source_count,
           cited_source_count, citation_count, unverified_count, insight_count, warning_count,
           md_path, html_path, json_path, duration_ms, tokens
    FROM report_catalog;
