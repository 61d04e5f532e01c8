"""BM25 over term lists (bm25s, Lucene's variant) and pseudo-relevance
feedback (RM3): what ranks the library's passages and, in synthesis, the
sentences of a task's sources — one relevance machinery for both.

    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    bm25(p) = Σ_t idf(t) · tf / (tf + k1 · (1 − b + b · |p| / avg|p|))
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Protocol

import bm25s
import numpy as np

K1, B = 1.2, 0.75
# bm25s logs every index it builds at DEBUG; a research run's terminal (and
# Prefect's log handler, which takes DEBUG) has no use for those lines
logging.getLogger("bm25s").setLevel(logging.WARNING)
FEEDBACK_PASSAGES = 10  # pseudo-relevance feedback: the best passages of the first pass ...
FEEDBACK_TERMS = 10  # ... give this many expansion terms ...
ORIGINAL_WEIGHT = 0.5  # ... weighted against the query's own terms (RM3's λ)


class Passages(Protocol):
    """What feedback needs of an index: a passage's terms and a term's idf."""

    def passage_terms(self, index: int) -> list[str]: ...
    def idf(self, term: str) -> float: ...


class TermIndex:
    """BM25 over a list of term lists, held in memory."""

    def __init__(self, docs: list[list[str]]):
        self.docs = docs
        self.bm25 = None
        if any(docs):
            self.bm25 = bm25s.BM25(k1=K1, b=B)
            self.bm25.index(docs, show_progress=False)
        self.df = Counter(t for doc in docs for t in set(doc))

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1 + (len(self.docs) - df + 0.5) / (df + 0.5))

    def passage_terms(self, index: int) -> list[str]:
        return self.docs[index]

    def scores(self, query: list[str]) -> np.ndarray:
        known = [t for t in dict.fromkeys(query) if self.df.get(t)]
        if self.bm25 is None or not known:
            return np.zeros(len(self.docs))
        return np.asarray(self.bm25.get_scores(known), dtype=float)

    def weighted_scores(self, weights: dict[str, float]) -> np.ndarray:
        """Σ_t weight(t) · bm25_t(passage): BM25 of a query whose terms carry weights."""
        total = np.zeros(len(self.docs))
        for term, weight in weights.items():
            if weight and self.df.get(term):
                total += weight * np.asarray(self.bm25.get_scores([term]), dtype=float)
        return total


def feedback_weights(index: Passages, wanted: list[str], first: np.ndarray) -> dict[str, float]:
    """RM3: the query's terms (weight λ by frequency) plus the terms that
    weigh most in the best first-pass passages (1 − λ), each term's weight
    there being Σ_passages tf/|p| · bm25(p), times its idf so that words
    common to every passage do not take over."""
    weights: Counter = Counter()
    for term, count in Counter(wanted).items():
        weights[term] += ORIGINAL_WEIGHT * count / len(wanted)
    feedback: Counter = Counter()
    for passage in np.argsort(-first)[:FEEDBACK_PASSAGES]:
        if first[passage] <= 0:
            break
        held = index.passage_terms(int(passage))
        for term, count in Counter(held).items():
            feedback[term] += count / len(held) * float(first[passage])
    chosen = Counter({term: value * index.idf(term) for term, value in feedback.items()}).most_common(FEEDBACK_TERMS)
    total = sum(value for _, value in chosen)
    for term, value in chosen:
        weights[term] += (1 - ORIGINAL_WEIGHT) * value / total
    return dict(weights)
