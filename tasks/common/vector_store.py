"""The sentence model's vectors, kept on disk (SEARCHLAKE_HOME/cache/
sentence-vectors.sqlite) so that a passage is read by the model once, not
once per question and per process: a library's pages come back question
after question, in the background server, in a batch's processes and after
the server idled out.

A vector is keyed by a hash of the model, its role (query or passage) and
the exact text it read, so a changed page or another model version is
simply another key. The file is a cache another program could write:
a row of the wrong size is ignored, and a file that cannot be read or
written (locked, corrupt, a read-only home) only means the model reads
the text again. It keeps at most KEEP vectors (about 1.6 KB each), the
oldest going first."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from pathlib import Path

import numpy as np

KEEP = 200_000
_LOG = logging.getLogger(__name__)
_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"


class VectorStore:
    def __init__(self, path: Path, model: str, dim: int):
        self.path, self.model, self.dim = path, model, dim
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def key(self, role: str, text: str) -> bytes:
        return hashlib.sha256(f"{self.model}\0{role}\0{text}".encode("utf-8", "replace")).digest()

    def get(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The stored vectors of those keys that have one of the right size."""
        db, found = self._open(), {}
        if db is None or not keys:
            return found
        size = self.dim * 4
        try:
            for start in range(0, len(keys), 500):  # SQLite's bound on parameters
                chunk = keys[start:start + 500]
                rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                                  chunk).fetchall()
                found.update((bytes(k), np.frombuffer(v, dtype="<f4").copy()) for k, v in rows
                             if isinstance(v, bytes) and len(v) == size)
        except sqlite3.Error as exc:
            self._give_up(exc)
        return found

    def put(self, vectors: dict[bytes, np.ndarray]) -> None:
        db = self._open()
        if db is None or not vectors:
            return
        try:
            with db:
                db.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)",
                               [(k, np.asarray(v, dtype="<f4").tobytes()) for k, v in vectors.items()])
                db.execute("DELETE FROM vectors WHERE rowid <= (SELECT max(rowid) FROM vectors) - ?", [KEEP])
        except sqlite3.Error as exc:
            self._give_up(exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _open(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=2.0, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
                self._db = db
            except (OSError, sqlite3.Error) as exc:
                self._give_up(exc)
        return self._db

    def _give_up(self, exc: Exception) -> None:
        _LOG.warning("sentence vectors: %s unusable (%s); the model reads the passages again", self.path, exc)
        self._broken = True
        self.close()
