-- Published reports, one row per task (see schema_40_reports.sql).
CREATE OR REPLACE VIEW reports AS
    SELECT task_id, generated_at, question, language, synthesizer, source_count,
           cited_source_count, citation_count, unverified_count, insight_count, warning_count,
           md_path, html_path, json_path, duration_ms, tokens, flow_run_id
    FROM report_catalog;
-- The citations of published reports, one row per quote (see schema_40_reports.sql).
CREATE OR REPLACE VIEW report_citations AS
    SELECT task_id, citation_number, source_id, url, title, quote, quote_start, quote_end, verified,
           section, item_index, quoted_field, url_domain(url) AS domain
    FROM report_citation_catalog;
