SELECT coalesce(max(landing_seq), 0) + 1 FROM bundle_catalog;
