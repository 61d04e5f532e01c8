-- One citation of a task's report (see schema_40_reports.sql).
INSERT INTO report_citation_catalog (task_id, citation_number, source_id, url, title, quote, quote_start,
                                     quote_end, verified, section, item_index, quoted_field)
VALUES ($task_id, $citation_number, $source_id, $url, $title, $quote, $quote_start,
        $quote_end, $verified, $section, $item_index, $quoted_field);
