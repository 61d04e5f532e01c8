"""The library's search index: a corpus's documents (walked, extracted and
cut into passages by documents.py) with each passage's terms
(tasks/common/text.py: the same tokenizer, stopwords and Porter stemmer as
queries and scoring), stored as one Parquet file per corpus under
SEARCHLAKE_HOME/library/<corpus id>/, and a BM25 index (bm25s) over the
passages, built from the stored terms when the corpus changes and saved
beside them; each passage also keeps its embedding (embeddings.py) for the
dense half of the ranking (provider.py).

Change detection per file: same (mtime, size) as stored -> unchanged, not
read; otherwise read and hash: same sha256 -> only mtime/size updated;
different -> re-extracted and re-tokenized. Stored files that disappeared
(or became unreadable) are dropped. Only changed files are read and
tokenized; the BM25 matrix is rebuilt from the stored terms (about a second
for the 530 pages of the Python documentation). Files that cannot be indexed
are returned as `Skip`s (path, reason) for the caller's error log.

BM25 (Lucene's variant, as bm25s computes it), k1 = 1.2, b = 0.75, per
passage; a passage's terms include its document's title terms:
    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    bm25(p) = Σ_t idf(t) · tf / (tf + k1 · (1 − b + b · |p| / avg|p|))
A term no passage holds has df = 0 (the largest idf).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

import bm25s
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock

from tasks.common.settings import Settings
from tasks.common.text import terms
from tasks.retrieval.providers.library.documents import Corpus, DocumentFile, Skip, corpus_for, passages
from tasks.retrieval.providers.library.extraction import SkipFile, extract
from tasks.retrieval.bm25 import B, K1
from tasks.retrieval.providers.library.embeddings import DIM, embed

STORE_FORMAT = 6  # bump when the stored text or terms change meaning (extraction, tokenizer, stemmer)


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
    rebuilt: bool = False
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


@dataclass(frozen=True)
class Document:
    path: str
    url: str
    kind: str
    mtime: float
    size: int
    sha256: str
    title: str
    text: str
    spans: tuple[tuple[int, int], ...]
    passage_terms: tuple[str, ...]  # per passage its terms, space-separated, its title's terms first
    vectors: bytes = b""  # per passage its embedding (float32 × embeddings.DIM), of title and passage


class LibraryIndex:
    """BM25 over every passage of one corpus; a document scores as its best passage."""

    def __init__(self, corpus_key: str, documents: list[Document], bm25: bm25s.BM25 | None):
        self.corpus_key = corpus_key
        self.documents = documents
        counts = [len(d.passage_terms) for d in documents]
        self.passage_doc = np.repeat(np.arange(len(documents)), counts)
        self.doc_start = np.concatenate(([0], np.cumsum(counts))).astype(int)
        self.passages = int(self.doc_start[-1])
        self.bm25 = bm25
        self.vectors = (np.frombuffer(b"".join(d.vectors for d in documents), dtype=np.float32)
                        .reshape(self.passages, DIM))
        # the index is column-major: a term's column holds one entry per passage containing it
        self._df = np.diff(bm25.scores["indptr"]) if bm25 is not None else np.zeros(0, dtype=int)
        self._memo: OrderedDict = OrderedDict()
        self._memo_guard = threading.Lock()

    @staticmethod
    def build(corpus_key: str, documents: list[Document]) -> LibraryIndex:
        corpus = [t.split() for d in documents for t in d.passage_terms]
        bm25 = None
        if corpus:
            bm25 = bm25s.BM25(k1=K1, b=B)
            bm25.index(corpus, show_progress=False)
        return LibraryIndex(corpus_key, documents, bm25)

    def df(self, term: str) -> int:
        column = self.bm25.vocab_dict.get(term) if self.bm25 is not None else None
        return 0 if column is None else int(self._df[column])

    def idf(self, term: str) -> float:
        df = self.df(term)
        return math.log(1 + (self.passages - df + 0.5) / (df + 0.5))

    def weighted_scores(self, weights: dict[str, float]) -> np.ndarray:
        """Σ_t weight(t) · bm25_t(passage): BM25 of a query whose terms carry weights."""
        total = np.zeros(self.passages)
        for term, weight in weights.items():
            if weight and self.df(term):
                total += weight * np.asarray(self.bm25.get_scores([term]), dtype=float)
        return total

    def passage_scores(self, query_terms: list[str]) -> np.ndarray:
        known = [t for t in dict.fromkeys(query_terms) if self.df(t)]
        if not known:
            return np.zeros(self.passages)
        return np.asarray(self.bm25.get_scores(known), dtype=float)

    def best_passages(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per document: its best passage's score and that passage's global index."""
        if not self.passages:
            return np.zeros(0), np.zeros(0, dtype=int)
        best = np.maximum.reduceat(scores, self.doc_start[:-1])
        # each document's first passage holding its best score, as argmax would pick it
        at_best = np.flatnonzero(scores == best[self.passage_doc])
        _, first = np.unique(self.passage_doc[at_best], return_index=True)
        return best, at_best[first]

    def passage(self, index: int) -> tuple[Document, int, str]:
        doc_no = int(self.passage_doc[index])
        doc, number = self.documents[doc_no], int(index - self.doc_start[doc_no])
        start, end = doc.spans[number]
        return doc, number, doc.text[start:end]

    def passage_terms(self, index: int) -> list[str]:
        doc_no = int(self.passage_doc[index])
        return self.documents[doc_no].passage_terms[int(index - self.doc_start[doc_no])].split()

    def remembered(self, key, compute, keep: int = 32):
        """compute(), remembered for this index under `key` (the last `keep` keys)."""
        with self._memo_guard:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        value = compute()
        with self._memo_guard:
            self._memo[key] = value
            while len(self._memo) > keep:
                self._memo.popitem(last=False)
        return value


# -- the store ----------------------------------------------------------------

def store_dir(settings: Settings, corpus: Corpus) -> Path:
    """SEARCHLAKE_HOME/library/<first 16 hex digits of sha256(corpus key)>."""
    return Path(settings.home) / "library" / hashlib.sha256(corpus.key.encode("utf-8")).hexdigest()[:16]


_SCHEMA = pa.schema([
    ("path", pa.string()), ("url", pa.string()), ("kind", pa.string()), ("mtime", pa.float64()),
    ("size", pa.int64()), ("sha256", pa.string()), ("title", pa.string()), ("text", pa.large_string()),
    ("span_start", pa.list_(pa.int32())), ("span_end", pa.list_(pa.int32())),
    ("passage_terms", pa.list_(pa.large_string())), ("vectors", pa.large_binary()),
])


def _read_store(folder: Path) -> list[Document]:
    meta, data = folder / "corpus.json", folder / "documents.parquet"
    if not meta.is_file() or not data.is_file():
        return []
    if json.loads(meta.read_text(encoding="utf-8")).get("format") != STORE_FORMAT:
        return []  # stored under another tokenizer: re-index everything
    table = pq.read_table(data, schema=_SCHEMA).to_pylist()
    return [Document(r["path"], r["url"], r["kind"], r["mtime"], r["size"], r["sha256"], r["title"], r["text"],
                     tuple(zip(r["span_start"], r["span_end"])), tuple(r["passage_terms"]), r["vectors"])
            for r in table]


def _write_store(folder: Path, corpus: Corpus, documents: list[Document], index: LibraryIndex | None) -> None:
    """Written to temporary names and renamed: a crash leaves the previous
    store. The documents file is written last: its stamp says the store changed."""
    folder.mkdir(parents=True, exist_ok=True)
    if index is not None and index.bm25 is not None:
        shutil.rmtree(folder / "bm25.tmp", ignore_errors=True)
        index.bm25.save(str(folder / "bm25.tmp"), show_progress=False)
        shutil.rmtree(folder / "bm25", ignore_errors=True)
        os.replace(folder / "bm25.tmp", folder / "bm25")
    table = pa.table({
        "path": [d.path for d in documents], "url": [d.url for d in documents],
        "kind": [d.kind for d in documents], "mtime": [float(d.mtime) for d in documents],
        "size": [d.size for d in documents], "sha256": [d.sha256 for d in documents],
        "title": [d.title for d in documents], "text": [d.text for d in documents],
        "span_start": [[s for s, _ in d.spans] for d in documents],
        "span_end": [[e for _, e in d.spans] for d in documents],
        "passage_terms": [list(d.passage_terms) for d in documents],
        "vectors": [d.vectors for d in documents],
    }, schema=_SCHEMA)
    pq.write_table(table, folder / "documents.parquet.tmp")
    (folder / "corpus.json.tmp").write_text(json.dumps({"key": corpus.key, "root": corpus.root,
                                                        "format": STORE_FORMAT}), encoding="utf-8")
    os.replace(folder / "corpus.json.tmp", folder / "corpus.json")
    os.replace(folder / "documents.parquet.tmp", folder / "documents.parquet")


# -- indexing -------------------------------------------------------------------

# In this process: the loaded index of each store folder, with the stamp of
# the file it was built from (another process may re-index meanwhile).
_LOADED: dict[str, tuple[tuple, LibraryIndex]] = {}
_GUARD = threading.RLock()


def index_library(settings: Settings, corpus: Corpus | None = None) -> IndexReport:
    """Bring the stored index of the configured corpus up to date."""
    corpus = corpus or corpus_for(settings)
    folder = store_dir(settings, corpus)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with _GUARD, FileLock(str(folder / "index.lock"), timeout=settings.lock_timeout or -1):
        report, documents = _update(corpus, _read_store(folder))
        if report.changed or not (folder / "documents.parquet").is_file():
            index = LibraryIndex.build(corpus.key, documents)
            _write_store(folder, corpus, documents, index)
            _LOADED[str(folder)] = (_stamp(folder), index)
            report.rebuilt = True
        elif report.touched:
            _write_store(folder, corpus, documents, None)  # new mtimes only: the BM25 index stands
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def open_index(settings: Settings, corpus: Corpus) -> LibraryIndex:
    """The corpus's index, loaded once per process and again when its store
    changed; a corpus never indexed is indexed first."""
    folder = store_dir(settings, corpus)
    with _GUARD:
        stamp = _stamp(folder)
        loaded = _LOADED.get(str(folder))
        if stamp is None:
            index_library(settings, corpus)
            return _LOADED[str(folder)][1]
        if loaded is None or loaded[0] != stamp:
            with FileLock(str(folder / "index.lock"), timeout=settings.lock_timeout or -1):
                _LOADED[str(folder)] = (_stamp(folder), _loaded(folder, corpus))
        return _LOADED[str(folder)][1]


def _stamp(folder: Path) -> tuple | None:
    try:
        info = (folder / "documents.parquet").stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _loaded(folder: Path, corpus: Corpus) -> LibraryIndex:
    documents = _read_store(folder)
    if not documents or not (folder / "bm25").is_dir():
        return LibraryIndex.build(corpus.key, documents)
    return LibraryIndex(corpus.key, documents, bm25s.BM25.load(str(folder / "bm25"), show_progress=False))


def _update(corpus: Corpus, stored: list[Document]) -> tuple[IndexReport, list[Document]]:
    report = IndexReport(corpus=corpus.key, root=corpus.root)
    known = {d.path: d for d in stored}
    kept: list[Document] = []
    for found in corpus.walk():
        if isinstance(found, Skip):
            report.skipped.append(found)
            continue
        outcome = _examine(found, known.get(found.path))
        if isinstance(outcome, Skip):
            report.skipped.append(outcome)
            continue
        kind, document = outcome
        setattr(report, kind, getattr(report, kind) + 1)
        kept.append(document)
    report.removed = len(set(known) - {d.path for d in kept})
    report.documents = len(kept)
    kept.sort(key=lambda d: d.path)
    return report, _with_vectors(kept)


def _with_vectors(documents: list[Document]) -> list[Document]:
    """Embed the passages of the documents that have no vectors yet, in one batch."""
    missing = [d for d in documents if not d.vectors and d.spans]
    texts = [f"{d.title}\n{d.text[s:e]}" for d in missing for s, e in d.spans]
    vectors, at, filled = embed(texts), 0, {}
    for doc in missing:
        filled[doc.path] = replace(doc, vectors=vectors[at:at + len(doc.spans)].tobytes())
        at += len(doc.spans)
    return [filled.get(d.path, d) for d in documents]


def _examine(candidate: DocumentFile, known: Document | None) -> Skip | tuple[str, Document]:
    """('unchanged' | 'touched' | 'updated' | 'added', the document), or a Skip."""
    if known and known.mtime == candidate.mtime and known.size == candidate.size:
        return "unchanged", known
    try:
        data = candidate.read()
    except SkipFile as reason:  # a link out of the library, a FIFO, a file too large
        return Skip(candidate.path, str(reason))
    except OSError as error:
        return Skip(candidate.path, f"unreadable: {error.strerror or error}")
    sha = hashlib.sha256(data).hexdigest()
    if known and known.sha256 == sha:
        return "touched", replace(known, mtime=candidate.mtime, size=candidate.size)
    try:
        extracted = extract(candidate.kind, data, candidate.path)
    except SkipFile as reason:
        return Skip(candidate.path, str(reason))
    spans = tuple(passages(extracted.text))
    title_terms = terms(extracted.title)
    passage_terms = tuple(" ".join(title_terms + terms(extracted.text[s:e])) for s, e in spans)
    document = Document(candidate.path, candidate.url, candidate.kind, candidate.mtime, candidate.size, sha,
                        extracted.title, extracted.text, spans, passage_terms)
    return ("updated" if known else "added"), document
