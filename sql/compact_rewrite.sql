-- Files whose rows were mostly deleted (replaced bundles) rewritten without them.
CALL ducklake_rewrite_data_files('lake');
