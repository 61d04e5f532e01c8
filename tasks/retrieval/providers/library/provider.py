"""The embedded default provider: hybrid search over the user's own documents
(or Python's docs), indexed by tasks/retrieval/providers/library/index.py. It
needs no catalog: its index lives under SEARCHLAKE_HOME/library/.

Results keep the order of the ranking (tasks/retrieval/providers/library/ranking.py,
which also says what provider_score and question_score mean); a hit's snippet is its
best passage, trimmed to about SNIPPET_CHARS around the query terms.

This module is what naming the provider costs: the index, its ranking and
numpy are imported when the library is first prepared or searched, not
when a request is checked.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, ClassVar

from tasks.common.settings import Settings
from tasks.common.text import CJK_RUN, terms
from tasks.retrieval.providers.base import Hit, Prepared, Query
from tasks.retrieval.providers.library.documents import corpus_for

if TYPE_CHECKING:
    import numpy as np

    from tasks.retrieval.providers.library.index import LibraryIndex

SNIPPET_CHARS = 300


class LibraryProvider:
    name: ClassVar[str] = "library"
    # its own intent only: "… survey" or "… 2026" means nothing to a folder of
    # documents (a query of an intent no enabled provider serves still comes here)
    intents: ClassVar[frozenset[str]] = frozenset({"library"})
    endpoint: ClassVar[str] = "file://library"
    settings_class: ClassVar[None] = None  # SEARCHLAKE_LIBRARY is one of searchlake's own settings
    key_required: ClassVar[bool] = False
    reads_intent: ClassVar[bool] = False
    max_concurrency: ClassVar[int] = 64
    min_interval_seconds: ClassVar[float] = 0.0
    prepares: ClassVar[str | None] = "indexing the library"
    finds_web_pages: ClassVar[bool] = False  # local documents, read whole when indexed
    answers_in_full: ClassVar[bool] = True  # ranking its whole index costs the same for 10 results or 50

    def __init__(self, settings: Settings, client=None):
        """A configured library folder that does not exist raises ValueError here."""
        self.settings = settings
        self.corpus = corpus_for(settings)

    @classmethod
    def configured(cls, settings: Settings) -> bool:
        return True  # the user's documents, or Python's docs

    @classmethod
    def preflight(cls, settings: Settings) -> list[str]:
        """A configured library folder that is not there."""
        try:
            corpus_for(settings)
        except ValueError as exc:
            return [str(exc)]
        return []

    def prepare(self) -> Prepared:
        """Index the corpus now (only what changed); unreadable files are
        named in `skipped`, for the error log."""
        from tasks.retrieval.providers.library.index import index_library
        report = index_library(self.settings, self.corpus)
        return Prepared(f"library {report.root}: {report.documents} documents ({report.added} added, "
                        f"{report.updated} updated, {report.removed} removed, {len(report.skipped)} skipped)",
                        [(skip.path, skip.reason) for skip in report.skipped])

    def search(self, query: Query, max_results: int) -> list[Hit]:
        if not terms(query.text) or max_results <= 0:
            return []
        from tasks.retrieval.providers.library.index import open_index
        from tasks.retrieval.providers.library.ranking import across_languages, question_ranking, ranking
        index = open_index(self.settings, self.corpus)
        found = ranking(index, query.text)
        question = (question_ranking(index, query.question, self.settings.sentence_vectors_path)
                    if query.question else None)
        if question is not None and question.across and across_languages(index, query.text):
            found = question  # words do not cross languages: the documents the question means
        keys = list(dict.fromkeys(terms(query.text)))
        # a long document is stored as its parts about what the task asks
        focus = question if question is not None else found
        return [self._hit(index, int(doc), int(found.passage[doc]), float(found.score[doc]), keys,
                          None if question is None else float(question.score[doc]), focus.passages)
                for doc in found.order[:max_results]]

    def _hit(self, index: LibraryIndex, doc_no: int, passage: int, score: float, keys: list[str],
             question_score: float | None, focus: np.ndarray) -> Hit:
        doc, number, text = index.passage(passage)
        start, end = int(index.doc_start[doc_no]), int(index.doc_start[doc_no + 1])
        best_first = [int(i) for i in (-focus[start:end]).argsort(kind="stable")]
        stored, spans = excerpt(doc.text, [doc.spans[i] for i in best_first], self.settings.content_max_chars)
        return Hit(
            url=doc.url,
            title=doc.title,
            snippet=best_window(text, keys),
            content_text=stored,
            provider_score=score,
            question_score=question_score,
            extra={
                "corpus": index.corpus_key,
                "path": doc.path,
                "kind": doc.kind,
                "passage_no": number,
                "modified_at": datetime.fromtimestamp(doc.mtime, timezone.utc).isoformat(),
                "content_truncated": len(stored) < len(doc.text),
                "content_spans": spans,
            },
        )


EXCERPT_CONTEXT = 800  # characters of context kept around each passage of a long document's excerpt
EXCERPT_GAP = "\n\n[…]\n\n"


def excerpt(text: str, passages: list[tuple[int, int]], limit: int) -> tuple[str, list[list[int]]]:
    """A document as stored, at most `limit` characters: all of it when it
    fits; else its passages best first (`passages`), each with some context
    and from the start of its paragraph, while they fit, in the document's
    order and joined by "[…]" — every piece verbatim. Returns the text and
    the [start, end) offsets in the document of its pieces."""
    if len(text) <= limit:
        return text, [[0, len(text)]]
    pieces: list[list[int]] = []
    for start, end in passages:
        start = _paragraph_start(text, max(0, start - EXCERPT_CONTEXT // 2))
        end = min(len(text), end + EXCERPT_CONTEXT)
        merged = sorted(pieces + [[start, end]])
        joined = [merged[0]]
        for piece in merged[1:]:
            if piece[0] <= joined[-1][1]:
                joined[-1][1] = max(joined[-1][1], piece[1])
            else:
                joined.append(piece)
        if sum(e - s for s, e in joined) + len(EXCERPT_GAP) * (len(joined) - 1) > limit:
            break
        pieces = joined
    if not pieces:  # the best passage alone is longer than the limit
        start = _paragraph_start(text, passages[0][0]) if passages else 0
        pieces = [[start, min(len(text), start + limit)]]
    return EXCERPT_GAP.join(text[s:e] for s, e in pieces), pieces


def _paragraph_start(text: str, at: int) -> int:
    paragraph = text.rfind("\n\n", 0, at)
    return paragraph + 2 if paragraph >= 0 and at - paragraph < EXCERPT_CONTEXT else at


# -- snippets -------------------------------------------------------------------

def _term_pattern(key: str) -> re.Pattern:
    """Where a stemmed term occurs in plain text. Porter stems are (nearly)
    prefixes of their words: 'manag' finds 'manager', 'managing'; a stem
    ending in 'i' may come from 'y' ('lazi' <- 'lazy')."""
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
