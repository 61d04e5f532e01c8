-- library_new_passages: an Arrow table registered by tasks/library_index.py
INSERT INTO library_passages (corpus, path, passage_no, char_start, char_len, title_terms, terms)
SELECT corpus, path, passage_no, char_start, char_len, title_terms, terms FROM library_new_passages;
