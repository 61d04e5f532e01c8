"""A research run's heartbeat: how a run whose process died reads as
`interrupted` without anyone writing it (docs/research.md).

While runs are in progress, their process adds one `run_heartbeat_log` row
per run every SEARCHLAKE_RUN_HEARTBEAT_SECONDS, in one short catalog session
of its own (never across a network or model call: the beating thread does
nothing else). Each run's row in `run_log` holds its lease, LEASE_BEATS
heartbeats; the `runs` view (sql/views_60_governance.sql) judges a run
still `running` whose last sign of life is older than its lease to be
interrupted. Analysts, `searchlake tasks` and the page read the same view,
so they agree, at once, with no other run needed to clean up.

One thread per catalog beats for every run of this process (a `serve` or a
batch runs several): one commit per interval, however many runs. Rows are
only ever inserted, so a heartbeat never conflicts with another writer's
commit (DuckLake's deletes and updates of one table do).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from tasks.common.settings import Settings
from tasks.common.text import counted
from tasks.lake.catalog import Catalog, open_catalog

log = logging.getLogger(__name__)

# Heartbeats a run may miss before it reads as interrupted: a busy machine or a
# catalog another command holds for a while delays one or two, not four.
LEASE_BEATS = 4
HEARTBEAT = "heartbeat"  # what its commits say first (`searchlake history` leaves them out)


def lease_seconds(settings: Settings) -> float:
    """How long a run of these settings may go without a sign of life."""
    return settings.run_heartbeat_seconds * LEASE_BEATS


def beat(settings: Settings, runs: Mapping[str, str]) -> None:
    """One heartbeat for `runs` (trace id → task id), in one commit."""
    def record(catalog: Catalog) -> None:
        catalog.run("run_heartbeat", [list(runs)])

    with open_catalog(settings, "heartbeat") as catalog:
        catalog.transaction(record, action=HEARTBEAT, detail=counted(len(runs), "run") + " in progress")


class _Beating:
    """The runs of one catalog in progress in this process, and the thread
    that beats for them while there are any."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.runs: dict[str, str] = {}
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.failing = False

    def add(self, trace_id: str, task_id: str) -> None:
        with self.lock:
            self.runs[trace_id] = task_id
            if self.thread is None:
                self.thread = threading.Thread(target=self._beat_while_runs, name="searchlake-heartbeat",
                                               daemon=True)
                self.thread.start()

    def remove(self, trace_id: str) -> None:
        with self.lock:
            self.runs.pop(trace_id, None)

    def _beat_while_runs(self) -> None:
        pause = threading.Event()
        while True:
            pause.wait(self.settings.run_heartbeat_seconds)
            with self.lock:
                runs = dict(self.runs)
                if not runs:
                    self.thread = None  # the next run to start starts another
                    return
            self._beat(runs)

    def _beat(self, runs: dict[str, str]) -> None:
        try:
            beat(self.settings, runs)
        except Exception as exc:  # the next heartbeat tries again; the run goes on either way
            if not self.failing:
                log.warning("could not record the heartbeat of %s: %s", counted(len(runs), "run"),
                            str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            self.failing = True
        else:
            self.failing = False


_BEATING: dict[tuple[str, str], _Beating] = {}
_BEATING_LOCK = threading.Lock()


def _beating_for(settings: Settings) -> _Beating:
    key = (settings.catalog_location, settings.lake_root)
    with _BEATING_LOCK:
        if key not in _BEATING:
            _BEATING[key] = _Beating(settings)
        return _BEATING[key]


@contextmanager
def keep_alive(settings: Settings, trace_id: str, task_id: str) -> Iterator[None]:
    """The run `trace_id` beats while inside (its `runs` row must exist: its
    start is its first sign of life)."""
    beating = _beating_for(settings)
    beating.add(trace_id, task_id)
    try:
        yield
    finally:
        beating.remove(trace_id)
