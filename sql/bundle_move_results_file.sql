UPDATE bundle_catalog SET results_file = ? WHERE results_file = ?;
