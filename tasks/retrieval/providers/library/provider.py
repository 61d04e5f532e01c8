"""The embedded default provider: BM25 over the user's own documents (or
Python's docs), indexed in the catalog by tasks/retrieval/providers/library/index.py.

A document scores as its best passage; its snippet is that passage, trimmed
to about SNIPPET_CHARS around the query terms.

provider_score — BM25 is unbounded and depends on the corpus and the query,
so it is calibrated against the query itself rather than against the other
results (dividing by the best result's score would make a weak best match
look perfect). With t over the query's distinct index terms (stemmed,
stopwords dropped) and idf(t) exactly as DuckDB's match_bm25 computes it:

    r = bm25(best passage) / Σ_t idf(t)
    c = Σ_{t in the passage or its title} idf(t) / Σ_t idf(t)
    provider_score = (1 − 5^(−r)) · √c

Σ idf(t) is the BM25 of a passage holding every query term once at average
length, so that passage scores 0.8; repeated terms saturate towards
1 − 5^(−(k1+1)) ≈ 0.97 (BM25 caps each term at idf·(k1+1), k1 = 1.2). The
coverage factor √c keeps a passage that repeats one query term from
scoring like one that holds them all. Query terms the corpus never contains
keep their (largest) idf in both sums, so a question about something the
library lacks scores low even for its best hit.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import ClassVar

import duckdb

from tasks.common.settings import Settings
from tasks.retrieval.providers.library.documents import corpus_for
from tasks.retrieval.providers.library.index import (
    INDEX_LOCK,
    LibraryUnavailable,
    corpus_state,
    index_form,
    index_library,
    load_fts,
)
from tasks.retrieval.providers.base import Hit, Query
from tasks.common.errors import RemoteError
from tasks.lake.sqlfiles import sql
from tasks.common.text import CJK_RUN

SNIPPET_CHARS = 300
SCORE_BASE = 5.0  # r = 1 (every term once, average length) -> 1 - 1/5 = 0.8


def calibrated_score(bm25: float, idf_sum: float, matched_idf: float) -> float:
    """See the module docstring: (1 − 5^(−bm25/Σidf)) · √(matched idf / Σidf)."""
    if idf_sum <= 0 or bm25 <= 0 or matched_idf <= 0:
        return 0.0
    coverage = min(1.0, matched_idf / idf_sum)
    return round((1.0 - SCORE_BASE ** (-bm25 / idf_sum)) * coverage ** 0.5, 6)


class LibraryProvider:
    name: ClassVar[str] = "library"
    intents: ClassVar[frozenset[str]] = frozenset({"academic", "news", "web", "library"})
    endpoint: ClassVar[str] = "file://library"

    def __init__(self, catalog, settings: Settings | None = None):
        """`catalog` is an open tasks.lake.catalog.Catalog. A configured library
        folder that does not exist raises ValueError here."""
        self.catalog = catalog
        self.settings = settings or catalog.settings
        self.corpus = corpus_for(self.settings)
        self.last_index = None  # the IndexReport when this provider had to index

    def prepare(self):
        """Index the corpus now (only what changed); returns the IndexReport,
        whose `skipped` list belongs in the error log."""
        self.last_index = index_library(self.catalog, self.settings, self.corpus)
        return self.last_index

    def search(self, query: Query, max_results: int) -> list[Hit]:
        text = index_form(query.text)
        if not text.strip() or max_results <= 0:
            return []
        # one cursor per call: searches may run on several threads at once
        cursor = self.catalog.con.cursor()
        try:
            self._ensure_index(cursor)
            rows = cursor.execute(sql("library_search"),
                                  [self.corpus.key, text, max_results, self.settings.content_max_chars]).fetchall()
            if not rows:
                return []
            idf = dict(cursor.execute(sql("library_query_terms"), [text]).fetchall())
            held = cursor.execute(sql("library_passage_terms"), [[row[7] for row in rows], list(idf)]).fetchall()
        except LibraryUnavailable as error:
            raise RemoteError("not_configured", str(error).splitlines()[0]) from error
        except duckdb.Error as error:
            raise RemoteError("index_error", f"library index: {error}".splitlines()[0]) from error
        finally:
            cursor.close()
        matched: dict[int, float] = {}
        for passage_id, term in held:
            matched[passage_id] = matched.get(passage_id, 0.0) + idf[term]
        idf_sum = sum(idf.values())
        return [self._hit(row, list(idf), calibrated_score(row[5], idf_sum, matched.get(row[7], 0.0)))
                for row in rows]

    def _ensure_index(self, cursor: duckdb.DuckDBPyConnection) -> None:
        """Searching a corpus nobody indexed yet indexes it first; an indexed
        corpus is not re-walked here (index_library does that once per run)."""
        load_fts(cursor)
        indexed, stale = corpus_state(cursor, self.corpus.key)
        if indexed and not stale:
            return
        with INDEX_LOCK:
            indexed, stale = corpus_state(cursor, self.corpus.key)
            if not indexed or stale:
                self.prepare()

    def _hit(self, row: tuple, keys: list[str], score: float) -> Hit:
        path, url, title, kind, mtime, bm25, passage_no, _, passage, content, text_chars = row
        return Hit(
            url=url,
            title=title,
            snippet=best_window(passage, keys),
            content_text=content,
            provider_score=score,
            extra={
                "corpus": self.corpus.key,
                "path": path,
                "kind": kind,
                "bm25": round(bm25, 6),
                "passage_no": passage_no,
                "modified_at": datetime.fromtimestamp(mtime, timezone.utc).isoformat(),
                "content_truncated": text_chars > len(content),
            },
        )


# -- snippets -------------------------------------------------------------------



def _term_pattern(key: str) -> re.Pattern:
    """Where a stemmed index term occurs in plain text. Porter stems are
    (nearly) prefixes of their words: 'manag' finds 'manager', 'managing';
    a stem ending in 'i' may come from 'y' ('lazi' <- 'lazy')."""
    if CJK_RUN.search(key):
        return re.compile(re.escape(key))
    stem = re.escape(key)
    if key.endswith("i") and len(key) > 2:
        stem = f"(?:{stem}|{re.escape(key[:-1])}y)"
    return re.compile(rf"(?<![^\W_]){stem}[^\W_]*", re.IGNORECASE)


def best_window(passage: str, keys: list[str], width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of the passage, placed to hold the most
    distinct query terms (then the most occurrences), cut at word bounds."""
    text = " ".join(passage.split())
    if len(text) <= width:
        return text
    hits = sorted((m.start(), m.end(), key) for key in keys for m in _term_pattern(key).finditer(text))
    if not hits:
        return _cut(text, 0, width)
    lead = width // 6  # a little context before the first term
    best = max(
        ((len({k for s, e, k in hits if begin <= s and e <= begin + width}),
          sum(1 for s, e, _ in hits if begin <= s and e <= begin + width), -begin)
         for begin in {max(0, min(start - lead, len(text) - width)) for start, _, _ in hits}),
    )
    return _cut(text, -best[2], width)


def _cut(text: str, begin: int, width: int) -> str:
    end = min(len(text), begin + width)
    if begin > 0:
        space = text.find(" ", begin, begin + 40)
        begin = space + 1 if space != -1 else begin
    if end < len(text):
        space = text.rfind(" ", end - 40, end)
        end = space if space > begin else end
    return ("… " if begin > 0 else "") + text[begin:end].strip() + (" …" if end < len(text) else "")
