-- $1 corpus, $2 list of document paths
DELETE FROM library_passages WHERE corpus = $1 AND list_contains($2, path);
