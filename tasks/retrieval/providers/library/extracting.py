"""Turning changed files into documents: extracted, cut into passages,
tokenized and embedded, in batches. A walk that finds many changed files (a
first index of a large folder) hands the batches to worker processes, one
per core, while it goes on reading; a few changed files are done in this
process, where starting workers (about a second each) would cost more.

Workers are spawned, not forked: a library is indexed inside servers whose
other threads may hold a lock (the embedding model's, a tokenizer's) that a
forked child would inherit held. There is a worker per core, so each works
in one thread: the tokenizer's and the linear algebra library's own
threads would only take turns with the other workers (and OpenBLAS's spin
while they wait).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace

from tasks.common.text import terms
from tasks.retrieval.providers.library.documents import Document, Skip, passages
from tasks.retrieval.providers.library.embeddings import embed
from tasks.retrieval.providers.library.extraction import SkipFile, extract
from tasks.retrieval.providers.library.term_matrix import TermMatrix

BATCH = 64  # files extracted together
POOL_AFTER = 4 * BATCH  # changed files a walk finds before the rest goes to worker processes
WORKERS = min(4, len(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class ChangedFile:
    """A file whose bytes changed, as read."""

    path: str
    url: str
    kind: str
    mtime: float
    size: int
    sha256: str
    data: bytes


@dataclass(frozen=True)
class NoText:
    """A file whose bytes hold no text to index (empty, binary, undecodable):
    so it stays while its mtime and size do."""

    path: str
    mtime: float
    size: int
    reason: str

    @property
    def skip(self) -> Skip:
        return Skip(self.path, self.reason)


@dataclass(frozen=True)
class Extracted:
    """A batch's documents (each with its passages' vectors), their passages'
    term counts in the same order, and the files that had no text to index."""

    documents: list[Document]
    matrix: TermMatrix
    skipped: list[NoText]


def extracted(batch: list[ChangedFile]) -> Extracted:
    documents, skipped = [], []
    for changed in batch:
        try:
            documents.append(_document(changed))
        except SkipFile as reason:
            skipped.append(NoText(changed.path, changed.mtime, changed.size, str(reason)))
    documents = with_vectors(documents)
    return Extracted(documents, TermMatrix.of(t for d in documents for t in d.passage_terms), skipped)


def _document(changed: ChangedFile) -> Document:
    page = extract(changed.kind, changed.data, changed.path)
    spans = tuple(passages(page.text))
    title_terms = terms(page.title)
    passage_terms = tuple(" ".join(title_terms + terms(page.text[s:e])) for s, e in spans)
    return Document(changed.path, changed.url, changed.kind, changed.mtime, changed.size, changed.sha256,
                    page.title, page.text, spans, passage_terms)


def with_vectors(documents: list[Document]) -> list[Document]:
    """The documents with their passages' embeddings, computed in one call."""
    missing = [d for d in documents if not d.vectors and d.spans]
    texts = [f"{d.title}\n{d.text[s:e]}" for d in missing for s, e in d.spans]
    vectors, at, filled = embed(texts), 0, {}
    for doc in missing:
        filled[doc.path] = replace(doc, vectors=vectors[at:at + len(doc.spans)].tobytes())
        at += len(doc.spans)
    return [filled.get(d.path, d) for d in documents]


def one_thread_each() -> None:
    """A worker's start: its tokenizer and matrix products in its own thread."""
    from threadpoolctl import threadpool_limits
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # read by the tokenizer at each call
    threadpool_limits(1)


class Extractor:
    """Takes changed files one by one; `finish()` gives every batch's
    Extracted, in the order the files came. Batches whose worker pool broke
    (a worker killed, or workers that cannot start) are done in this process."""

    def __init__(self) -> None:
        self.waiting: list[ChangedFile] = []
        self.taken = 0
        self.done: list[Extracted] = []
        self.in_flight: deque[tuple[list[ChangedFile], Future]] = deque()
        self.pool: ProcessPoolExecutor | None = None
        self.pool_broke = False

    def add(self, changed: ChangedFile) -> None:
        self.waiting.append(changed)
        self.taken += 1
        if self.taken > POOL_AFTER and len(self.waiting) >= BATCH:
            if WORKERS > 1 and not self.pool_broke:
                self._hand_over()
            if self.pool is None:  # one core, or workers that broke: here, a batch at a time
                self._extract_waiting_here()

    def finish(self) -> list[Extracted]:
        try:
            if self.pool is not None:
                self._hand_over()
            self._extract_waiting_here()
            return self.done
        finally:
            self.close()

    def _extract_waiting_here(self) -> None:
        while self.in_flight:
            self._take_oldest()
        while self.waiting:
            batch, self.waiting = self.waiting[:BATCH], self.waiting[BATCH:]
            self.done.append(extracted(batch))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def _hand_over(self) -> None:
        try:
            if self.pool is None and not self.pool_broke:
                self.pool = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=one_thread_each)
            while self.waiting and self.pool is not None:
                self.in_flight.append((self.waiting[:BATCH], self.pool.submit(extracted, self.waiting[:BATCH])))
                self.waiting = self.waiting[BATCH:]
        except (BrokenProcessPool, OSError):  # workers that cannot start: what waits is done here
            self._given_up()
        while len(self.in_flight) > 2 * WORKERS:  # what is read waits in memory: keep it bounded
            self._take_oldest()

    def _take_oldest(self) -> None:
        batch, future = self.in_flight.popleft()
        try:
            self.done.append(future.result())
        except BrokenProcessPool:
            self._given_up()
            self.done.append(extracted(batch))

    def _given_up(self) -> None:
        self.pool_broke = True
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
