"""The library's full-text index in the catalog: bring a corpus's documents
(walked, extracted and cut into passages by tasks/retrieval/providers/library/documents.py) into the
catalog, re-indexing only what changed, and keep a BM25 index of the passages.

Change detection per file: same (mtime, size) as indexed -> unchanged, not
read; otherwise read and hash: same sha256 -> only mtime/size updated;
different -> re-extracted and re-chunked. Indexed files that disappeared (or
became unreadable) are dropped. The full-text index is rebuilt only when a
corpus changed. Files that cannot be indexed are returned as `Skip`s (path,
reason) for the caller's error log; they never raise.

CJK text has no spaces between words, so the index sees CJK runs as
overlapping character bigrams (`index_form`); queries get the same treatment.

All corpora share one DuckDB FTS index (`fts_main_library_passages`); a search
filters by corpus, so BM25's idf statistics are over every indexed corpus.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb
import pyarrow as pa

from tasks.common.settings import Settings
from tasks.retrieval.providers.library.documents import DocumentFile, Corpus, Extracted, Skip, SkipFile, corpus_for, extract, passages
from tasks.lake.sqlfiles import sql
from tasks.common.text import CJK_RUN, cjk_bigrams

# Serializes indexing in this process: two threads must not rebuild the same
# FTS index at once (the catalog's file lock already serializes processes).
INDEX_LOCK = threading.RLock()


@dataclass
class IndexReport:
    corpus: str
    root: str
    documents: int = 0
    added: int = 0
    updated: int = 0
    touched: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: list[Skip] = field(default_factory=list)
    fts_rebuilt: bool = False
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


class LibraryUnavailable(RuntimeError):
    """DuckDB's full-text extension cannot be loaded."""


# -- index form ---------------------------------------------------------------

_CJK_PUNCTUATION = re.compile(r"[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]")


def index_form(text: str) -> str:
    """The text as the full-text index sees it: CJK runs become space-separated
    character bigrams (CJK has no word spaces; bigrams are the usual remedy),
    everything else is left to DuckDB's tokenizer."""
    text = _CJK_PUNCTUATION.sub(" ", text)
    return CJK_RUN.sub(lambda m: " " + " ".join(cjk_bigrams(m.group())) + " ", text)


# -- the catalog --------------------------------------------------------------

_fts_installed = False


def load_fts(con: duckdb.DuckDBPyConnection) -> None:
    """LOAD fts without the internet: the extension binary comes from the
    `duckdb-extension-fts` package, installed into DuckDB on first need."""
    global _fts_installed
    try:
        con.execute(sql("library_load_fts"))
        return
    except duckdb.Error:
        if _fts_installed:
            raise
    try:
        from duckdb_extensions import import_extension

        import_extension("fts", con=con)
        con.execute(sql("library_load_fts"))
    except (ImportError, duckdb.Error) as error:
        raise LibraryUnavailable(
            f"DuckDB's fts extension cannot be loaded (is duckdb-extension-fts installed?): {error}"
        ) from error
    _fts_installed = True


def index_library(catalog, settings: Settings | None = None, corpus: Corpus | None = None) -> IndexReport:
    """Bring the catalog's index of the configured corpus up to date."""
    settings = settings or catalog.settings
    corpus = corpus or corpus_for(settings)
    with INDEX_LOCK:
        cursor = catalog.con.cursor()
        try:
            return _index(cursor, corpus)
        finally:
            cursor.close()


def _index(con: duckdb.DuckDBPyConnection, corpus: Corpus) -> IndexReport:
    started = time.perf_counter()
    report = IndexReport(corpus=corpus.key, root=corpus.root)
    load_fts(con)
    known = {path: (mtime, size, sha) for path, mtime, size, sha in
             con.execute(sql("library_documents_state"), [corpus.key]).fetchall()}
    seen: set[str] = set()
    fresh: list[tuple[DocumentFile, str, Extracted]] = []
    touched: list[DocumentFile] = []
    for found in corpus.walk():
        if isinstance(found, Skip):
            report.skipped.append(found)
            continue
        outcome = _examine(found, known.get(found.path))
        if isinstance(outcome, Skip):
            report.skipped.append(outcome)
            continue
        seen.add(found.path)
        if outcome == "unchanged":
            report.unchanged += 1
        elif outcome == "touched":
            touched.append(found)
        else:
            fresh.append((found, *outcome))
    gone = sorted(set(known) - seen)
    report.added = sum(1 for c, _, _ in fresh if c.path not in known)
    report.updated = len(fresh) - report.added
    report.touched, report.removed, report.documents = len(touched), len(gone), len(seen)
    _write(con, corpus, fresh, touched, gone, changed=report.changed)
    report.fts_rebuilt = _rebuild_fts_if_stale(con)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _examine(candidate: DocumentFile, known: tuple | None) -> Skip | str | tuple[str, Extracted]:
    """'unchanged', 'touched' (same bytes), (sha256, Extracted) for new or
    changed content, or a Skip."""
    if known and known[0] == candidate.mtime and known[1] == candidate.size:
        return "unchanged"
    try:
        data = candidate.read()
    except OSError as error:
        return Skip(candidate.path, f"unreadable: {error.strerror or error}")
    sha = hashlib.sha256(data).hexdigest()
    if known and known[2] == sha:
        return "touched"
    try:
        return sha, extract(candidate.kind, data, candidate.path)
    except SkipFile as reason:
        return Skip(candidate.path, str(reason))


def _write(con, corpus: Corpus, fresh, touched: list[DocumentFile], gone: list[str], *, changed: bool) -> None:
    """Apply one corpus's changes in one transaction: a crash leaves the
    previous state, and `fts_stale` set with the data it describes."""
    now = datetime.now(timezone.utc)
    replaced = gone + [c.path for c, _, _ in fresh]
    con.begin()
    try:
        if replaced:
            con.execute(sql("library_passages_delete"), [corpus.key, replaced])
            con.execute(sql("library_documents_delete"), [corpus.key, replaced])
        if fresh:
            _insert(con, "library_new_documents", "library_documents_insert", _documents_table(corpus, fresh, now))
            _insert(con, "library_new_passages", "library_passages_insert", _passages_table(corpus, fresh))
        if touched:
            table = pa.table({"corpus": [corpus.key] * len(touched), "path": [c.path for c in touched],
                              "mtime": [c.mtime for c in touched], "size": [c.size for c in touched]})
            _insert(con, "library_touched", "library_documents_touch", table)
        con.execute(sql("library_corpus_put"), [corpus.key, corpus.root, changed, now])
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _insert(con, view: str, statement: str, table: pa.Table) -> None:
    con.register(view, table)
    try:
        con.execute(sql(statement))
    finally:
        con.unregister(view)


def _documents_table(corpus: Corpus, fresh, now: datetime) -> pa.Table:
    return pa.table({
        "corpus": [corpus.key] * len(fresh),
        "path": [c.path for c, _, _ in fresh],
        "url": [c.url for c, _, _ in fresh],
        "kind": [c.kind for c, _, _ in fresh],
        "mtime": [float(c.mtime) for c, _, _ in fresh],
        "size": [c.size for c, _, _ in fresh],
        "sha256": [sha for _, sha, _ in fresh],
        "title": [doc.title for _, _, doc in fresh],
        "text": [doc.text for _, _, doc in fresh],
        "indexed_at": pa.array([now] * len(fresh), pa.timestamp("us", tz="UTC")),
    })


def _passages_table(corpus: Corpus, fresh) -> pa.Table:
    columns: dict[str, list] = {name: [] for name in
                                ("corpus", "path", "passage_no", "char_start", "char_len", "title_terms", "terms")}
    for candidate, _, doc in fresh:
        title_terms = index_form(doc.title)
        for number, (start, end) in enumerate(passages(doc.text)):
            columns["corpus"].append(corpus.key)
            columns["path"].append(candidate.path)
            columns["passage_no"].append(number)
            columns["char_start"].append(start)
            columns["char_len"].append(end - start)
            columns["title_terms"].append(title_terms)
            columns["terms"].append(index_form(doc.text[start:end]))
    return pa.table(columns, schema=pa.schema([
        ("corpus", pa.string()), ("path", pa.string()), ("passage_no", pa.int32()),
        ("char_start", pa.int32()), ("char_len", pa.int32()),
        ("title_terms", pa.string()), ("terms", pa.string()),
    ]))


def corpus_state(con: duckdb.DuckDBPyConnection, corpus_key: str) -> tuple[bool, bool]:
    """(is the corpus indexed, does the FTS index need a rebuild)."""
    indexed, stale = con.execute(sql("library_corpus_state"), [corpus_key]).fetchone()
    return bool(indexed), bool(stale)


def _rebuild_fts_if_stale(con: duckdb.DuckDBPyConnection) -> bool:
    # a missing index counts as stale, so a crash before the rebuild heals here
    _, stale = corpus_state(con, "")
    if not stale:
        return False
    con.execute(sql("library_fts_rebuild"))
    con.execute(sql("library_fts_fresh"))
    return True
