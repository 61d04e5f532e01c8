DELETE FROM lake_files WHERE path = ?;
