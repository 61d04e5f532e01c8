-- Every lake file a row names, besides the tables' own: raw bundles,
-- quarantined input, report files.
SELECT raw_path FROM bundle_catalog WHERE raw_path IS NOT NULL
UNION SELECT stored_path FROM quarantine_log WHERE stored_path IS NOT NULL
UNION SELECT unnest([md_path, html_path, json_path]) FROM report_catalog;
