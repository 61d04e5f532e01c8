"""A library's passages read by the sentence model while nothing else runs.

A new question costs the sentence model some 60 passages of the library
(provider.question_ranking: the best three of the first twenty documents),
seconds on two cores, though which passages a question needs is only known
once it is asked. The passages themselves depend only on the library: read
once, their vectors are kept (SEARCHLAKE_HOME/cache/sentence-vectors.sqlite)
and every later question, in any process, finds them there.

A long-lived server (`searchlake serve`, the background server `research`
runs in) reads them in its idle time: after each run, the library that run
searched, a few passages at a time, pausing as soon as a run is in
progress, in a thread the system schedules last; the first passage of
every document first, then the second, so that a library larger than
SEARCHLAKE_READ_AHEAD_PASSAGES is read evenly."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

import numpy as np

from tasks.common.sentence_model import read_ahead, vectors_kept_in
from tasks.common.settings import Settings
from tasks.retrieval.providers.library.documents import corpus_for
from tasks.retrieval.providers.library.index import LibraryIndex, open_index
from tasks.retrieval.providers.library.provider import meaning_text

BATCH = 4  # passages per turn: a run that starts waits for at most one turn of the model (a fraction of a second)
PAUSE = 1.0  # seconds between looks while a run is in progress or nothing is left to read

_LOG = logging.getLogger(__name__)


def reading_order(index: LibraryIndex, limit: int) -> np.ndarray:
    """The passages to read, at most `limit`: every document's first, then
    every document's second, and so on."""
    number = np.arange(index.passages)
    position = number - index.doc_start[index.passage_doc] if index.passages else number
    return np.lexsort((number, position))[:limit]


class ReadAhead:
    """Reads the passages of the library of the last run while `busy()` is
    false, in a daemon thread (`start`)."""

    def __init__(self, limit: int, busy: Callable[[], bool]):
        self.limit, self.busy = limit, busy
        self._settings: Settings | None = None
        self._index: LibraryIndex | None = None
        self._order: np.ndarray = np.zeros(0, dtype=int)
        self._next = 0
        self._started = time.perf_counter()
        self._stop = threading.Event()
        self._warned = False

    def follow(self, settings: Settings) -> None:
        """Read the library of these settings (a run's) from now on."""
        if self.limit:
            self._settings = settings

    def start(self) -> "ReadAhead":
        if self.limit:
            threading.Thread(target=self._loop, name="library read-ahead", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def turn(self) -> int:
        """Read one batch of the passages not read yet, unless a run is in
        progress; how many passages it read (0: nothing to do)."""
        settings = self._settings
        if settings is None or self.busy():
            return 0
        index = open_index(settings, corpus_for(settings))  # loaded once; again when the library changed
        if index is not self._index:
            self._index, self._order, self._next = index, reading_order(index, self.limit), 0
            self._started = time.perf_counter()
        batch = self._order[self._next:self._next + BATCH]
        if not len(batch):
            return 0
        with vectors_kept_in(settings.sentence_vectors_path):
            read_ahead([meaning_text(index, int(p)) for p in batch])
        self._next += len(batch)
        if self._next >= len(self._order):
            _LOG.info("read ahead: %d passages of %s in %.1f s", len(self._order), index.corpus_key,
                         time.perf_counter() - self._started)
        return len(batch)

    def _loop(self) -> None:
        _schedule_last()
        while not self._stop.is_set():
            try:
                read = self.turn()
            except Exception as exc:  # a library removed or unreadable: its next run says so; this waits
                read = 0
                if not self._warned:
                    _LOG.warning("read ahead: %s", f"{type(exc).__name__}: {exc}".splitlines()[0])
                    self._warned = True
            if not read:
                self._stop.wait(PAUSE)


def _schedule_last() -> None:
    """Give this thread (and the model's threads it starts) the lowest CPU
    priority, where the system allows it per thread (Linux)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass
