"""The library's search index: a corpus's documents (walked, extracted and
cut into passages by documents.py) with each passage's terms
(tasks/common/text.py: the same tokenizer, stopwords and Porter stemmer as
queries and scoring) and embedding (embeddings.py, for the dense half of the
ranking in provider.py), stored under SEARCHLAKE_HOME/library/<corpus id>/
in segments (store.py reads and writes the files), with BM25 over all of
them (term_matrix.py).

A segment (`s<number>/`) holds the documents written together, as a Parquet
file, and their passages' term counts; it is never changed once written.
`index.json` names the live segments and, per segment, the documents a later
segment replaced or that were removed; it is written last, whole, so a
crash leaves the index as it was. A re-index writes one new segment with the
changed documents, so its cost follows what changed, not the library's size.
When there are more than MAX_SEGMENTS segments the small ones are merged;
when a quarter of the stored passages are dead, everything is rewritten as
one segment.

Change detection per file: same (mtime, size) as stored -> unchanged, not
read; otherwise read and hash: same sha256 -> "touched", the stored document
moves to the new segment with its new mtime; different -> re-extracted and
re-tokenized. Stored files that disappeared (or became unreadable) are
dropped. Files that cannot be indexed are returned as `Skip`s (path, reason)
for the caller's error log.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
from filelock import FileLock

from schemas.errors import InternalError
from tasks.common.settings import Settings
from tasks.retrieval.providers.library import store
from tasks.retrieval.providers.library.documents import Corpus, Document, DocumentFile, Skip, corpus_for
from tasks.retrieval.providers.library.embeddings import DIM
from tasks.retrieval.providers.library.extracting import ChangedFile, Extracted, Extractor, NoText
from tasks.retrieval.providers.library.extraction import SkipFile
from tasks.retrieval.providers.library.store import Manifest, Segment, store_dir
from tasks.retrieval.providers.library.term_matrix import SegmentedBM25, TermMatrix

MAX_SEGMENTS = 8
MOST_DEAD = 0.25  # share of the stored passages dead at which everything is rewritten as one segment


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
    rebuilt: bool = False  # the index's content changed
    segments: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


class LibraryIndex:
    """BM25 over every live passage of one corpus; a document scores as its best passage."""

    def __init__(self, corpus_key: str, segments: list[Segment], manifest: Manifest):
        self.corpus_key, self.store = corpus_key, manifest.store
        self.segments, dead = segments, manifest.dead_by_segment
        stored = [d for s in segments for i, d in enumerate(s.documents) if i not in dead.get(s.name, ())]
        # in the order of their paths, whatever segment holds them: an index grown by re-indexes
        # ranks (ties included) as one built at once
        order = sorted(range(len(stored)), key=lambda n: stored[n].path)
        self.documents = [stored[n] for n in order]
        counts = [len(d.passage_terms) for d in self.documents]
        self.passage_doc = np.repeat(np.arange(len(self.documents)), counts)
        self.doc_start = np.concatenate(([0], np.cumsum(counts))).astype(int)
        self.passages = int(self.doc_start[-1])
        self.bm25 = SegmentedBM25([s.matrix.without(store.dead_passages(s, dead.get(s.name, frozenset())))
                                   for s in segments], _renumbering(stored, order, self.doc_start))
        self.vectors = (np.frombuffer(b"".join(d.vectors for d in self.documents), dtype=np.float32)
                        .reshape(self.passages, DIM))
        self._memo: OrderedDict = OrderedDict()
        self._memo_guard = threading.Lock()

    def df(self, term: str) -> int:
        return self.bm25.df(term)

    def idf(self, term: str) -> float:
        return self.bm25.idf(term)

    def weighted_scores(self, weights: dict[str, float]) -> np.ndarray:
        """Σ_t weight(t) · bm25_t(passage): BM25 of a query whose terms carry weights."""
        total = np.zeros(self.passages)
        for term, weight in weights.items():
            if weight:
                self.bm25.add_scores(total, term, weight)
        return total

    def passage_scores(self, query_terms: list[str]) -> np.ndarray:
        return self.weighted_scores(dict.fromkeys(query_terms, 1.0))

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


def _renumbering(stored: list[Document], order: list[int], doc_start: np.ndarray) -> np.ndarray:
    """For each live passage in the order of the segments, its number in the order of the paths."""
    counts = np.array([len(d.passage_terms) for d in stored], dtype=np.int64)
    position = np.empty(len(stored), dtype=np.int64)
    position[order] = np.arange(len(stored))
    doc = np.repeat(np.arange(len(stored)), counts)
    within = np.arange(int(counts.sum())) - np.concatenate(([0], np.cumsum(counts)))[doc]
    return doc_start[position[doc]] + within


# -- indexing -------------------------------------------------------------------

# In this process: the loaded index of each store folder, with the stamp of
# the manifest it was loaded from (another process may re-index meanwhile).
_LOADED: dict[str, tuple[tuple, LibraryIndex]] = {}
_GUARD = threading.RLock()


@dataclass(frozen=True)
class _Stored:
    """Where a stored document lives, and what change detection compares."""

    segment: str
    number: int
    passages: int
    mtime: float
    size: int
    sha256: str


@dataclass
class _Changes:
    """What a walk of the corpus found against the store."""

    report: IndexReport
    fresh: list[Extracted] = field(default_factory=list)  # added or updated: extracted anew
    touched: dict[str, tuple[float, int]] = field(default_factory=dict)  # path -> new (mtime, size)
    gone: list[_Stored] = field(default_factory=list)  # stored documents replaced, moved or removed
    no_text: list[NoText] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.fresh or self.touched or self.gone)


class _Segments:
    """The store's segments, each read from disk at most once, those of this
    process's loaded index taken from memory."""

    def __init__(self, folder: Path, manifest: Manifest):
        self.folder = folder
        self.known: dict[str, Segment] = _segments_in_memory(folder, manifest)

    def __getitem__(self, name: str) -> Segment:
        if name not in self.known:
            self.known[name] = store.read_segment(self.folder, name)
        return self.known[name]

    def add(self, segment: Segment) -> None:
        store.write_segment(self.folder, segment)
        self.known[segment.name] = segment

    def all_in_memory(self, names: tuple[str, ...]) -> list[Segment] | None:
        return [self.known[n] for n in names] if all(n in self.known for n in names) else None


def index_library(settings: Settings, corpus: Corpus | None = None) -> IndexReport:
    """Bring the stored index of the configured corpus up to date."""
    corpus = corpus or corpus_for(settings)
    folder = store_dir(settings, corpus)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with _GUARD, FileLock(str(folder / "index.lock"), timeout=settings.lock_timeout or -1):
        manifest = store.read_manifest(folder)
        stored = _stored(folder, manifest)
        if stored is None:  # a segment named by the manifest is missing or unreadable: start again
            manifest, stored = Manifest(), ({}, {})
        known_no_text = store.read_no_text(folder) if manifest.segments else {}
        changes = _update(corpus, stored[0], known_no_text)
        if {n.path: n for n in changes.no_text} != known_no_text:
            store.write_no_text(folder, changes.no_text)
        if changes.any or not manifest.segments:
            segments = _Segments(folder, manifest)
            manifest = _with_changes(manifest, stored[0], changes, segments)
            manifest = _merged_if_due(manifest, _live_passages(manifest, stored[1], changes, segments), segments)
            store.write_manifest(folder, corpus, manifest)
            whole = segments.all_in_memory(manifest.segments)
            if whole is None:  # this process has not loaded the index: open_index reads it when asked
                _LOADED.pop(str(folder), None)
            else:
                _LOADED[str(folder)] = (store.manifest_stamp(folder), LibraryIndex(corpus.key, whole, manifest))
        store.remove_unlisted(folder, manifest)  # also what a crash after the last manifest left
        changes.report.rebuilt = changes.report.changed
        changes.report.segments = len(manifest.segments)
    changes.report.seconds = round(time.perf_counter() - started, 3)
    return changes.report


def open_index(settings: Settings, corpus: Corpus) -> LibraryIndex:
    """The corpus's index, loaded once per process and again when its store
    changed (reading only the segments it does not hold yet); a corpus never
    indexed is indexed first, and so is a store that cannot be read."""
    folder = store_dir(settings, corpus)
    with _GUARD:
        for attempt in range(2):
            loaded = _LOADED.get(str(folder))
            if loaded is not None and loaded[0] == store.manifest_stamp(folder):
                return loaded[1]
            stamp, manifest, segments = _read_store(settings, folder)
            if segments:
                _LOADED[str(folder)] = (stamp, LibraryIndex(corpus.key, segments, manifest))
                return _LOADED[str(folder)][1]
            if attempt == 0:  # never indexed, of another format, or unreadable: indexed now
                index_library(settings, corpus)
    raise InternalError(f"the library's index in {folder} cannot be read, even after indexing it again")


def _read_store(settings: Settings, folder: Path) -> tuple[tuple | None, Manifest, list[Segment]]:
    """The manifest's stamp, the manifest and its segments (none when one cannot be read)."""
    with FileLock(str(folder / "index.lock"), timeout=settings.lock_timeout or -1):
        stamp, manifest = store.manifest_stamp(folder), store.read_manifest(folder)
        held = _segments_in_memory(folder, manifest)
        try:
            return stamp, manifest, [held.get(name) or store.read_segment(folder, name) for name in manifest.segments]
        except (OSError, pa.ArrowException, ValueError):
            return stamp, manifest, []


def _segments_in_memory(folder: Path, manifest: Manifest) -> dict[str, Segment]:
    """The segments of this process's index of the folder, when it is of the same store."""
    loaded = _LOADED.get(str(folder))
    if loaded is None or loaded[1].store != manifest.store:
        return {}
    return {segment.name: segment for segment in loaded[1].segments}


def _stored(folder: Path, manifest: Manifest) -> tuple[dict[str, _Stored], dict[str, tuple[int, int]]] | None:
    """The live stored documents by path, and each segment's passages alive
    and in all; None when a segment cannot be read."""
    dead = manifest.dead_by_segment
    found: dict[str, _Stored] = {}
    held: dict[str, tuple[int, int]] = {}
    for name in manifest.segments:
        try:
            rows = store.read_stamps(folder, name)
        except (OSError, pa.ArrowException):
            return None
        alive = 0
        for number, (path, mtime, size, sha, passages_held) in enumerate(rows):
            if number not in dead.get(name, ()):
                found[path] = _Stored(name, number, passages_held, mtime, size, sha)
                alive += passages_held
        held[name] = (alive, sum(row[-1] for row in rows))
    return found, held


def _update(corpus: Corpus, stored: dict[str, _Stored], known_no_text: dict[str, NoText]) -> _Changes:
    changes = _Changes(IndexReport(corpus=corpus.key, root=corpus.root))
    report, seen, extractor = changes.report, set(), Extractor()
    try:
        for found in corpus.walk():
            if isinstance(found, Skip):
                report.skipped.append(found)
                continue
            empty = known_no_text.get(found.path)
            if empty is not None and (empty.mtime, empty.size) == (found.mtime, found.size):
                changes.no_text.append(empty)
                report.skipped.append(empty.skip)
                continue
            known = stored.get(found.path)
            outcome = _examine(found, known)
            if isinstance(outcome, Skip):
                report.skipped.append(outcome)
            elif isinstance(outcome, ChangedFile):
                extractor.add(outcome)
            else:
                setattr(report, outcome, getattr(report, outcome) + 1)
                seen.add(found.path)
                if outcome == "touched":
                    changes.touched[found.path] = (found.mtime, found.size)
                    changes.gone.append(known)
        changes.fresh = extractor.finish()
    finally:
        extractor.close()
    for part in changes.fresh:
        changes.no_text += part.skipped
        report.skipped += [empty.skip for empty in part.skipped]
        for document in part.documents:
            seen.add(document.path)
            known = stored.get(document.path)
            report.updated += known is not None
            report.added += known is None
            if known is not None:
                changes.gone.append(known)
    removed = [known for path, known in stored.items() if path not in seen]
    report.removed = len(removed)
    changes.gone += removed
    report.documents = len(seen)
    return changes


def _with_changes(manifest: Manifest, stored: dict[str, _Stored], changes: _Changes,
                  segments: _Segments) -> Manifest:
    """The store with one new segment of the fresh and touched documents, and
    the documents they replace (and the removed ones) marked dead."""
    moved = [replace(segments[stored[path].segment].documents[stored[path].number], mtime=mtime, size=size)
             for path, (mtime, size) in changes.touched.items()]
    dead = {name: set(numbers) for name, numbers in manifest.dead}
    for known in changes.gone:
        dead.setdefault(known.segment, set()).add(known.number)
    names, number = list(manifest.segments), manifest.next_number
    parts = changes.fresh + [Extracted(moved, TermMatrix.of(t for d in moved for t in d.passage_terms), [])]
    if any(part.documents for part in parts) or not names:
        segments.add(Segment.of(f"s{number:06d}", parts))
        names.append(f"s{number:06d}")
        number += 1
    return replace(manifest, segments=tuple(names), dead=tuple((n, frozenset(dead.get(n, ()))) for n in names),
                   next_number=number)


def _live_passages(manifest: Manifest, held: dict[str, tuple[int, int]], changes: _Changes,
                   segments: _Segments) -> dict[str, tuple[int, int]]:
    """Per segment after the changes: its passages alive, and all it holds."""
    counts = dict(held)
    for known in changes.gone:
        alive, total = counts[known.segment]
        counts[known.segment] = (alive - known.passages, total)
    for name in manifest.segments:
        if name not in counts:  # written now
            total = segments[name].matrix.passages
            counts[name] = (total, total)
    return counts


def _merged_if_due(manifest: Manifest, passages: dict[str, tuple[int, int]], segments: _Segments) -> Manifest:
    """Everything as one segment when a quarter of the stored passages are
    dead; the segments but the largest as one when there are too many."""
    names = manifest.segments
    alive = sum(passages[n][0] for n in names)
    total = sum(passages[n][1] for n in names)
    if total and 1 - alive / total >= MOST_DEAD:
        merging = names
    elif len(names) > MAX_SEGMENTS:
        largest = max(names, key=lambda n: passages[n][0])
        merging = tuple(n for n in names if n != largest)
    else:
        return manifest
    dead = manifest.dead_by_segment
    merged = f"s{manifest.next_number:06d}"
    segments.add(Segment.of(merged, [segments[n].live(dead[n]) for n in merging]))
    at = names.index(merging[0])  # the merged segment takes the place of the first it holds
    order = [n for n in names[:at] if n not in merging] + [merged] + [n for n in names[at:] if n not in merging]
    return replace(manifest, segments=tuple(order), dead=tuple((n, dead.get(n, frozenset())) for n in order),
                   next_number=manifest.next_number + 1)


def _examine(candidate: DocumentFile, known: _Stored | None) -> Skip | ChangedFile | str:
    """'unchanged' | 'touched' (same bytes, new mtime), the file's bytes to
    extract, or a Skip."""
    if known and known.mtime == candidate.mtime and known.size == candidate.size:
        return "unchanged"
    try:
        data = candidate.read()
    except SkipFile as reason:  # a link out of the library, a FIFO, a file too large
        return Skip(candidate.path, str(reason))
    except OSError as error:
        return Skip(candidate.path, f"unreadable: {error.strerror or error}")
    sha = hashlib.sha256(data).hexdigest()
    if known and known.sha256 == sha:
        return "touched"
    return ChangedFile(candidate.path, candidate.url, candidate.kind, candidate.mtime, candidate.size, sha, data)
