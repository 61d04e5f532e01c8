-- The local document library (the `library` search provider): documents,
-- their passages (the unit BM25 ranks), and one row per indexed corpus.
-- A corpus is a folder of the user's documents or Python's own docs.
-- No primary keys on the document tables: rows are replaced by delete +
-- insert in one transaction, which DuckDB's unique indexes refuse.
CREATE SEQUENCE IF NOT EXISTS library_passage_ids;

CREATE TABLE IF NOT EXISTS library_corpora (
    corpus        VARCHAR PRIMARY KEY,
    root          VARCHAR NOT NULL,
    doc_count     BIGINT NOT NULL,
    passage_count BIGINT NOT NULL,
    indexed_at    TIMESTAMPTZ NOT NULL,
    -- true from a change of the corpus until the full-text index is rebuilt
    fts_stale     BOOLEAN NOT NULL
);

CREATE TABLE IF NOT EXISTS library_documents (
    corpus     VARCHAR NOT NULL,
    path       VARCHAR NOT NULL,   -- relative to the corpus root (a topic name for Python's docs)
    url        VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,   -- markdown, text, rst, html, pdf, pydoc
    mtime      DOUBLE NOT NULL,
    size       BIGINT NOT NULL,
    sha256     VARCHAR NOT NULL,
    title      VARCHAR NOT NULL,
    text       VARCHAR NOT NULL,
    indexed_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS library_passages (
    passage_id  BIGINT NOT NULL DEFAULT nextval('library_passage_ids'),
    corpus      VARCHAR NOT NULL,
    path        VARCHAR NOT NULL,
    passage_no  INTEGER NOT NULL,
    char_start  INTEGER NOT NULL,  -- the passage is text[char_start : char_start + char_len] of its document
    char_len    INTEGER NOT NULL,
    title_terms VARCHAR NOT NULL,  -- the document title in index form (CJK as character bigrams)
    terms       VARCHAR NOT NULL   -- the passage in index form
);
