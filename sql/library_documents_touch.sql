-- Files whose bytes did not change but whose mtime/size did (touched, copied).
-- library_touched: an Arrow table (corpus, path, mtime, size) registered by tasks/library_index.py
UPDATE library_documents AS d SET mtime = t.mtime, size = t.size
FROM library_touched AS t WHERE d.corpus = t.corpus AND d.path = t.path;
