"""What the sentence model will read of a library, read while nothing else runs.

A new question costs the sentence model seconds on two cores: some 60
passages of the library, to rank the question's documents
(retrieval's question_ranking), and up to 200 sentences of the sources, to
choose the evidence (evidence._sentence_closeness). Which ones a question
needs is only known once it is asked, but the texts themselves depend only
on the library: read once, their vectors are kept
(SEARCHLAKE_HOME/cache/sentence-vectors.sqlite) and every later question,
in any process, finds them there.

A long-lived server (`searchlake serve`, the background server `research`
runs in) reads them in its idle time: after each run, the library that run
searched, a few texts at a time, pausing as soon as a run is in progress,
in a thread the system schedules last. First the passages, every
document's first before any second one; then each document's sentences as
synthesis reads them from a source holding the whole page (a page stored
in parts, longer than SEARCHLAKE_CONTENT_MAX_CHARS, gives a few other
ones); at most SEARCHLAKE_READ_AHEAD_TEXTS in all."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from itertools import chain, islice

import numpy as np

from tasks.common.sentence_model import read_ahead, vectors_kept_in
from tasks.common.settings import Settings
from tasks.retrieval.providers.library.documents import Document, corpus_for
from tasks.retrieval.providers.library.index import LibraryIndex, open_index
from tasks.retrieval.providers.library.ranking import meaning_text
from tasks.synthesis.base import Source
from tasks.synthesis.candidates import candidates, windows

BATCH = 4  # texts per turn: a run that starts waits for at most one turn of the model (a fraction of a second)
PAUSE = 1.0  # seconds between looks while a run is in progress or nothing is left to read

_LOG = logging.getLogger(__name__)


def passage_order(index: LibraryIndex) -> np.ndarray:
    """Every passage of the library: each document's first, then each one's second, and so on."""
    number = np.arange(index.passages)
    position = number - index.doc_start[index.passage_doc] if index.passages else number
    return np.lexsort((number, position))


def sentences_as_read(document: Document) -> list[str]:
    """What synthesis's sentence model reads of a source holding the whole document."""
    source = Source(number=1, source_id=document.path, url=document.url, title=document.title,
                    content_text=document.text)
    return [window.as_read for window in windows(candidates([source]))]


def texts_to_read(index: LibraryIndex, limit: int) -> Iterator[str]:
    """The library's passages, then its documents' sentences, at most `limit` texts."""
    passages = (meaning_text(index, int(p)) for p in passage_order(index))
    sentences = chain.from_iterable(sentences_as_read(document) for document in index.documents)
    return islice(chain(passages, sentences), limit)


class ReadAhead:
    """Reads what the sentence model will read of the library of the last
    run while `busy()` is false, in a daemon thread (`start`)."""

    def __init__(self, limit: int, busy: Callable[[], bool]):
        self.limit, self.busy = limit, busy
        self._settings: Settings | None = None
        self._index: LibraryIndex | None = None
        self._pending: Iterator[str] = iter(())
        self._read = 0
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
        """Read the next few texts not read yet, unless a run is in
        progress; how many it read (0: nothing to do)."""
        settings = self._settings
        if settings is None or self.busy():
            return 0
        index = open_index(settings, corpus_for(settings))  # loaded once; again when the library changed
        if index is not self._index:
            self._index, self._pending = index, texts_to_read(index, self.limit)
            self._read, self._started = 0, time.perf_counter()
        batch = list(islice(self._pending, BATCH))
        if batch:
            with vectors_kept_in(settings.sentence_vectors_path):
                read_ahead(batch)
            self._read += len(batch)
        elif self._read:
            _LOG.info("read ahead: %d texts of %s in %.1f s", self._read, index.corpus_key,
                      time.perf_counter() - self._started)
            self._read = 0
        return len(batch)

    def _loop(self) -> None:
        _schedule_last()
        while not self._stop.is_set():
            try:
                read = self.turn()
                self._warned = False
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
