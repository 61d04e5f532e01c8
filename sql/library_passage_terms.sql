-- Which of the query's index terms ($2, stemmed) each passage ($1, passage ids)
-- holds, in its title or text: the coverage part of the library's score.
SELECT DISTINCT docs.name AS passage_id, dict.term
FROM fts_main_library_passages.terms AS terms
JOIN fts_main_library_passages.docs AS docs ON docs.docid = terms.docid
JOIN fts_main_library_passages.dict AS dict ON dict.termid = terms.termid
WHERE list_contains($1, docs.name) AND list_contains($2, dict.term);
