-- What the catalog holds of one corpus, to find changed files. $1 corpus
SELECT path, mtime, size, sha256 FROM library_documents WHERE corpus = $1;
