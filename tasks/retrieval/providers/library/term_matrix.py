"""BM25 over passages kept in several segments.

A segment's passages are stored once as a term-by-passage matrix of counts
(`TermMatrix`, compressed by column). The BM25 weights are computed when a
query asks for a term, from the counts and the statistics of every live
passage of every segment (their number, each term's document frequency,
the mean length), so a segment written for a few changed pages never
rewrites the others and scores stay those of one index over all passages.
Lucene's variant, as bm25s computes it (the tests check the two agree):

    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    bm25_t(p) = idf(t) · tf / (tf + k1 · (1 − b + b · |p| / avg|p|))
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tasks.retrieval.bm25 import B, K1

MAX_COUNT = np.iinfo(np.uint16).max


@dataclass(frozen=True)
class TermMatrix:
    """The passages of one segment: passage `indices[indptr[c]:indptr[c + 1]]`
    (ascending) holds the term `vocab[c]` `counts[…]` times; `lengths` is each
    passage's number of terms."""

    vocab: tuple[str, ...]
    indptr: np.ndarray
    indices: np.ndarray
    counts: np.ndarray
    lengths: np.ndarray

    @staticmethod
    def of(passage_terms: Iterable[str]) -> TermMatrix:
        """From each passage's terms, space-separated."""
        columns: dict[str, int] = {}
        cols, rows, counts, lengths = array("i"), array("i"), array("H"), array("i")
        for row, text in enumerate(passage_terms):
            words = text.split()
            lengths.append(len(words))
            for term, count in Counter(words).items():
                cols.append(columns.setdefault(term, len(columns)))
                rows.append(row)
                counts.append(min(count, MAX_COUNT))
        return _by_column(columns, np.frombuffer(cols, dtype=np.int32), np.frombuffer(rows, dtype=np.int32),
                          np.frombuffer(counts, dtype=np.uint16), np.frombuffer(lengths, dtype=np.int32).copy())

    @staticmethod
    def joined(matrices: list[TermMatrix]) -> TermMatrix:
        """One matrix of the passages of several, in their order."""
        columns: dict[str, int] = {}
        cols, rows, offset = [], [], 0
        for matrix in matrices:
            mapping = np.array([columns.setdefault(t, len(columns)) for t in matrix.vocab], dtype=np.int32)
            cols.append(np.repeat(mapping, np.diff(matrix.indptr)))
            rows.append(matrix.indices + np.int32(offset))
            offset += matrix.passages
        return _by_column(columns, _joined(cols, np.int32), _joined(rows, np.int32),
                          _joined([m.counts for m in matrices], np.uint16),
                          _joined([m.lengths for m in matrices], np.int32))

    @property
    def passages(self) -> int:
        return len(self.lengths)

    def save(self, folder: Path) -> None:
        (folder / "vocab.txt").write_text("\n".join(self.vocab), encoding="utf-8")
        with open(folder / "terms.npz", "wb") as out:
            np.savez(out, indptr=self.indptr, indices=self.indices, counts=self.counts, lengths=self.lengths)

    @staticmethod
    def load(folder: Path) -> TermMatrix:
        text = (folder / "vocab.txt").read_text(encoding="utf-8")
        with np.load(folder / "terms.npz") as arrays:
            return TermMatrix(tuple(text.split("\n")) if text else (), arrays["indptr"], arrays["indices"],
                              arrays["counts"], arrays["lengths"])

    def without(self, dead: np.ndarray) -> TermMatrix:
        """The matrix of the passages not marked dead, numbered anew in order."""
        if not dead.any():
            return self
        alive = ~dead
        renumber = np.cumsum(alive) - 1
        keep = alive[self.indices]
        kept_before = np.concatenate(([0], np.cumsum(keep)))
        indptr = kept_before[self.indptr].astype(np.int64)
        return TermMatrix(self.vocab, indptr, renumber[self.indices[keep]].astype(np.int32),
                          self.counts[keep], self.lengths[alive])


def _by_column(columns: dict[str, int], col: np.ndarray, row: np.ndarray, count: np.ndarray,
               lengths: np.ndarray) -> TermMatrix:
    """The matrix of entries (col, row, count) given in ascending row order."""
    order = np.argsort(col, kind="stable")  # rows stay ascending within a column
    indptr = np.zeros(len(columns) + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=len(columns)), out=indptr[1:])
    return TermMatrix(tuple(columns), indptr, row[order], count[order], lengths)


def _joined(arrays: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


class SegmentedBM25:
    """BM25 over the live passages of several segments. Passage n of the
    segments taken one after another is passage `renumber[n]` of the index
    (n itself without it)."""

    def __init__(self, matrices: list[TermMatrix], renumber: np.ndarray | None = None):
        self.matrices = [m for m in matrices if m.passages]
        self.offsets = np.cumsum([0] + [m.passages for m in self.matrices])
        self.passages = int(self.offsets[-1])
        self.renumber = np.arange(self.passages) if renumber is None else renumber
        self.columns = [dict(zip(m.vocab, range(len(m.vocab)))) for m in self.matrices]
        lengths = np.zeros(self.passages, dtype=np.float64)
        if self.matrices:
            lengths[self.renumber] = np.concatenate([m.lengths for m in self.matrices])
        mean = float(lengths.mean()) if self.passages else 1.0
        self.norm = (K1 * (1 - B + B * lengths / (mean or 1.0))).astype(np.float32)

    def df(self, term: str) -> int:
        total = 0
        for matrix, columns in zip(self.matrices, self.columns):
            column = columns.get(term)
            if column is not None:
                total += int(matrix.indptr[column + 1] - matrix.indptr[column])
        return total

    def idf(self, term: str) -> float:
        df = self.df(term)
        return math.log(1 + (self.passages - df + 0.5) / (df + 0.5))

    def add_scores(self, total: np.ndarray, term: str, weight: float = 1.0) -> None:
        """total += weight · bm25_term(passage), for every passage."""
        idf = self.idf(term)
        for matrix, columns, offset in zip(self.matrices, self.columns, self.offsets):
            column = columns.get(term)
            if column is None:
                continue
            start, end = matrix.indptr[column], matrix.indptr[column + 1]
            where = self.renumber[matrix.indices[start:end] + offset]
            tf = matrix.counts[start:end].astype(np.float32)
            total[where] += weight * idf * tf / (tf + self.norm[where])
