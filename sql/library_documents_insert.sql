-- library_new_documents: an Arrow table registered by tasks/library_index.py
INSERT INTO library_documents (corpus, path, url, kind, mtime, size, sha256, title, text, indexed_at)
SELECT corpus, path, url, kind, mtime, size, sha256, title, text, indexed_at FROM library_new_documents;
