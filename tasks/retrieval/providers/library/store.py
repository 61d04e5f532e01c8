"""The library index's store under SEARCHLAKE_HOME/library/<corpus id>/:
its manifest (`index.json`), its segments (`s<number>/`: `documents.parquet`,
and the passages' term counts of term_matrix.py) and the files found to hold
no text (`no-text.parquet`), read and written. Each file is written under a
temporary name and renamed, so it is whole or absent. What is read is
input: a manifest of another format, or naming segments that are not
`s` + 6 digits, reads as empty (everything is indexed again)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.common.settings import Settings
from tasks.retrieval.providers.library.documents import Corpus, Document
from tasks.retrieval.providers.library.extracting import Extracted, NoText
from tasks.retrieval.providers.library.term_matrix import TermMatrix

STORE_FORMAT = 7  # bump when the stored text or terms change meaning (extraction, tokenizer, stemmer) or the layout
MANIFEST = "index.json"
NO_TEXT = "no-text.parquet"  # the files found to hold no text, with their mtime and size: not read again
_SEGMENT_NAME = re.compile(r"s\d{6}")
_STORE_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class Segment:
    """Documents written together, in order, and their passages' term counts."""

    name: str
    documents: tuple[Document, ...]
    matrix: TermMatrix

    @staticmethod
    def of(name: str, parts: list[Extracted]) -> Segment:
        return Segment(name, tuple(d for part in parts for d in part.documents),
                       TermMatrix.joined([part.matrix for part in parts]))

    def live(self, dead: frozenset[int]) -> Extracted:
        """Its documents but the dead ones, with their term counts."""
        return Extracted([d for n, d in enumerate(self.documents) if n not in dead],
                         self.matrix.without(dead_passages(self, dead)), [])


def dead_passages(segment: Segment, dead: frozenset[int]) -> np.ndarray:
    marks = [number in dead for number, d in enumerate(segment.documents) for _ in d.passage_terms]
    return np.array(marks, dtype=bool)


def store_dir(settings: Settings, corpus: Corpus) -> Path:
    """SEARCHLAKE_HOME/library/<first 16 hex digits of sha256(corpus key)>."""
    return Path(settings.home) / "library" / hashlib.sha256(corpus.key.encode("utf-8")).hexdigest()[:16]


_SCHEMA = pa.schema([
    ("path", pa.string()), ("url", pa.string()), ("kind", pa.string()), ("mtime", pa.float64()),
    ("size", pa.int64()), ("sha256", pa.string()), ("title", pa.string()), ("text", pa.large_string()),
    ("span_start", pa.list_(pa.int32())), ("span_end", pa.list_(pa.int32())),
    ("passage_terms", pa.list_(pa.large_string())), ("vectors", pa.large_binary()),
])
STAMP_COLUMNS = ["path", "mtime", "size", "sha256"]


@dataclass(frozen=True)
class Manifest:
    """The live segments, in order, each with the numbers of its dead documents."""

    segments: tuple[str, ...] = ()
    dead: tuple[tuple[str, frozenset[int]], ...] = ()
    next_number: int = 1
    # new with every store started afresh: a segment's name is unique within one store, and a process
    # keeps the segments it has read for as long as the store is the same
    store: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def dead_by_segment(self) -> dict[str, frozenset[int]]:
        return dict(self.dead)


def read_manifest(folder: Path) -> Manifest:
    """The stored manifest; an empty one (everything indexed again) where
    there is none, or it is of another format or not one searchlake wrote."""
    try:
        stored = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if stored.get("format") != STORE_FORMAT:
            return Manifest()
        names = tuple(stored["segments"])
        if not all(isinstance(n, str) and _SEGMENT_NAME.fullmatch(n) for n in names) or len(set(names)) < len(names):
            return Manifest()
        dead = tuple((n, frozenset(int(i) for i in stored["dead"].get(n, []))) for n in names)
        if not _STORE_ID.fullmatch(stored["store"]):
            return Manifest()
        return Manifest(names, dead, max(int(stored["next"]), *(int(n[1:]) + 1 for n in names), 1), stored["store"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return Manifest()


def write_manifest(folder: Path, corpus: Corpus, manifest: Manifest) -> None:
    body = {"format": STORE_FORMAT, "key": corpus.key, "root": corpus.root, "segments": list(manifest.segments),
            "dead": {name: sorted(numbers) for name, numbers in manifest.dead if numbers},
            "next": manifest.next_number, "store": manifest.store}
    temporary = folder / f"{MANIFEST}.tmp"
    temporary.write_text(json.dumps(body), encoding="utf-8")
    os.replace(temporary, folder / MANIFEST)


def read_no_text(folder: Path) -> dict[str, NoText]:
    try:
        rows = pq.read_table(folder / NO_TEXT).to_pylist()
        return {r["path"]: NoText(r["path"], r["mtime"], r["size"], r["reason"]) for r in rows}
    except (OSError, pa.ArrowException, KeyError, TypeError):
        return {}


def write_no_text(folder: Path, found: list[NoText]) -> None:
    table = pa.table({"path": [n.path for n in found], "mtime": [float(n.mtime) for n in found],
                      "size": [n.size for n in found], "reason": [n.reason for n in found]},
                     schema=pa.schema([("path", pa.string()), ("mtime", pa.float64()), ("size", pa.int64()),
                                       ("reason", pa.string())]))
    pq.write_table(table, folder / f"{NO_TEXT}.tmp")
    os.replace(folder / f"{NO_TEXT}.tmp", folder / NO_TEXT)


def read_segment(folder: Path, name: str) -> Segment:
    rows = pq.read_table(folder / name / "documents.parquet", schema=_SCHEMA).to_pylist()
    documents = tuple(Document(r["path"], r["url"], r["kind"], r["mtime"], r["size"], r["sha256"], r["title"],
                               r["text"], tuple(zip(r["span_start"], r["span_end"])), tuple(r["passage_terms"]),
                               r["vectors"]) for r in rows)
    return Segment(name, documents, TermMatrix.load(folder / name))


def write_segment(folder: Path, segment: Segment) -> None:
    """Written under a temporary name and renamed: a segment is whole or absent."""
    documents = segment.documents
    temporary = folder / f"{segment.name}.tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
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
    pq.write_table(table, temporary / "documents.parquet")
    segment.matrix.save(temporary)
    shutil.rmtree(folder / segment.name, ignore_errors=True)
    os.replace(temporary, folder / segment.name)


def remove_unlisted(folder: Path, manifest: Manifest) -> None:
    """Segments no manifest names any more (merged, or left by a crash), and
    the files of earlier store formats."""
    for entry in folder.iterdir():
        listed = entry.name in manifest.segments
        if entry.is_dir() and not listed and (_SEGMENT_NAME.fullmatch(entry.name.removesuffix(".tmp"))
                                              or entry.name in ("bm25", "bm25.tmp")):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name in ("documents.parquet", "corpus.json"):
            entry.unlink(missing_ok=True)


def manifest_stamp(folder: Path) -> tuple | None:
    try:
        info = (folder / MANIFEST).stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def read_stamps(folder: Path, name: str) -> list[tuple[str, float, int, str, int]]:
    """Per document of a segment, in order: what change detection compares
    (path, mtime, size, sha256) and its number of passages — the few columns
    a re-index reads instead of the whole segment."""
    table = pq.read_table(folder / name / "documents.parquet", columns=STAMP_COLUMNS + ["span_start"])
    counts = pc.list_value_length(table["span_start"]).fill_null(0).to_pylist()
    return list(zip(*(table[c].to_pylist() for c in STAMP_COLUMNS), counts))

