INSERT INTO report_catalog (task_id, generated_at, question, language, synthesizer, source_count,
                            cited_source_count, citation_count, unverified_count, insight_count,
                            warning_count, md_path, html_path, json_path, duration_ms, tokens, flow_run_id,
                            first_insight)
VALUES ($task_id, $generated_at, $question, $language, $synthesizer, $source_count,
        $cited_source_count, $citation_count, $unverified_count, $insight_count,
        $warning_count, $md_path, $html_path, $json_path, $duration_ms, $tokens, $flow_run_id,
        $first_insight);
