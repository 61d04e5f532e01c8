"""Validating a large set of bundle files in forked worker processes.

prepare() is CPU work: for a big enough set of files it runs in a pool of
worker processes (forked, so they start at once) that die with their parent.
The pool replaces itself when a worker dies: a file that was in flight runs
again alone in the next pool, and a file that kills that worker too is
refused (`validation_crashed`) while the rest lands.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import multiprocessing
import os
import signal
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from tasks.lake.refusals import Refusal, failure_refusal
from tasks.lake.validation import FileRoots, InputFile, ReadyBundle, Submission, prepare

WORKERS = min(2, os.cpu_count() or 1)
POOL_MIN_BYTES = 4 << 20  # below this a pool costs more than it saves
POOL_WINDOW_BYTES = 64 << 20  # raw bytes handed to the workers and not yet taken back


def workers_for(files: list[InputFile]) -> int:
    """How many processes prepared() should use for these files."""
    if WORKERS < 2 or len(files) < 2 * WORKERS:
        return 1
    total = 0
    for file in files:
        try:
            total += file.path.lstat().st_size  # an estimate: links are not followed
        except OSError:
            continue
        if total >= POOL_MIN_BYTES:
            return WORKERS
    return 1


def prepared(submissions: Iterable[Submission | Refusal], task_id: str | None, workers: int,
             file_roots: FileRoots = None) -> Iterator[ReadyBundle | Refusal]:
    """prepare() of each submission, in order; in worker processes when asked."""
    if workers < 2:
        return (sub if isinstance(sub, Refusal) else prepare(sub, task_id, file_roots) for sub in submissions)
    return _prepared_in_pool(submissions, task_id, workers, file_roots)


class _Workers:
    """A process pool that is replaced when a worker dies. A submission that
    was in flight when its pool broke runs again alone in the next pool; one
    that breaks that pool too is refused."""

    def __init__(self, workers: int, task_id: str | None, file_roots: FileRoots):
        self.workers, self.task_id, self.file_roots = workers, task_id, file_roots
        self.generation = 0
        self.pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        # fork: the workers start at once and only run this module's pure Python
        # and Arrow code; they never touch the catalog connection they inherit.
        return ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_worker_started, initargs=(os.getpid(),))

    def submit(self, sub: Submission) -> tuple[Future, int]:
        with warnings.catch_warnings():  # Python >= 3.12 warns of fork() beside DuckDB's threads
            warnings.filterwarnings("ignore", r".*multi-threaded.*fork\(\)", DeprecationWarning)
            return self.pool.submit(_prepare_detached, sub.source, sub.raw, self.task_id,
                                    self.file_roots), self.generation

    def outcome(self, sub: Submission, future: Future, generation: int) -> ReadyBundle | Refusal:
        try:
            return _attached(sub, future)
        except BrokenProcessPool:
            self._replace(generation)
        except Exception as exc:  # noqa: BLE001 - whatever came back, the file is refused
            return failure_refusal(sub, exc)
        future, generation = self.submit(sub)
        try:
            return _attached(sub, future)
        except BrokenProcessPool:
            self._replace(generation)
            message = "a validation worker died on this file (twice)"
            return Refusal(sub.source, "validation_crashed", message, raw=sub.raw,
                           errors=({"field": "", "type": "validation_crashed", "message": message},))
        except Exception as exc:  # noqa: BLE001
            return failure_refusal(sub, exc)

    def _replace(self, broken_generation: int) -> None:
        if broken_generation == self.generation:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new_pool()
            self.generation += 1

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _prepared_in_pool(submissions: Iterable[Submission | Refusal], task_id: str | None,
                      workers: int, file_roots: FileRoots) -> Iterator[ReadyBundle | Refusal]:
    pool = _Workers(workers, task_id, file_roots)
    pending: deque[tuple[Submission | Refusal, Future | None, int]] = deque()
    in_flight = 0

    def outcome(sub: Submission | Refusal, future: Future | None, generation: int) -> ReadyBundle | Refusal:
        return sub if isinstance(sub, Refusal) else pool.outcome(sub, future, generation)  # type: ignore[arg-type]

    try:
        for sub in submissions:
            future, generation = (None, 0) if isinstance(sub, Refusal) else pool.submit(sub)
            pending.append((sub, future, generation))
            in_flight += len(sub.raw) if future is not None else 0  # type: ignore[union-attr]
            while pending and (in_flight > POOL_WINDOW_BYTES or pending[0][1] is None or pending[0][1].done()):
                done, future, generation = pending.popleft()
                if future is not None:
                    in_flight -= len(done.raw)  # type: ignore[union-attr]
                yield outcome(done, future, generation)
        while pending:
            yield outcome(*pending.popleft())
    finally:
        pool.close()


_PR_SET_PDEATHSIG = 1


def _worker_started(parent: int) -> None:
    _die_with_parent(parent)
    # The objects inherited from the parent are not this worker's garbage:
    # keep the collector off them (and their copy-on-write pages).
    gc.freeze()


def _die_with_parent(parent: int) -> None:
    """Linux kills this worker when the process that forked it dies, even by
    SIGKILL (which runs no clean-up in the parent)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown is all there is
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _prepare_detached(source: str, raw: bytes, task_id: str | None,
                      file_roots: FileRoots) -> tuple[ReadyBundle | Refusal, bool]:
    """prepare() in a worker: the outcome travels back without the raw bytes
    (the caller has them), and a candidate with its items as Arrow columns."""
    outcome = prepare(Submission(source, raw), task_id, file_roots)
    if isinstance(outcome, Refusal):
        if outcome.raw is raw:
            return dataclasses.replace(outcome, raw=None), True
        return outcome, False
    outcome.bundle = None  # prepare() gave its items as Arrow columns
    outcome.raw = b""
    return outcome, True


def _attached(sub: Submission, future: Future) -> ReadyBundle | Refusal:
    outcome, detached = future.result()
    if detached:
        if isinstance(outcome, Refusal):
            return dataclasses.replace(outcome, raw=sub.raw)
        outcome.raw = sub.raw
    return outcome
