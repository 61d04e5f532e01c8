"""Landing bundles as a search brings them: each caller's bundle lands
before the caller goes on, in one commit with the bundles of the same task
that other threads brought meanwhile, so a search stage makes a few commits
rather than one per query."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from schemas.bundle import SearchResultBundle
from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.lake.landing import LandingReport, land_bundles


class _Arrivals:
    """The bundles of one task waiting to land (see land_as_it_arrives)."""

    def __init__(self) -> None:
        self.guard = threading.Lock()    # over `waiting`
        self.landing = threading.Lock()  # one landing at a time
        self.waiting: list[_Arrival] = []


@dataclass
class _Arrival:
    bundle: SearchResultBundle
    report: LandingReport | None = None
    error: BaseException | None = None


# Entries go when no thread uses them any more.
_ARRIVALS: "weakref.WeakValueDictionary[tuple[str, str, str], _Arrivals]" = weakref.WeakValueDictionary()
_ARRIVALS_GUARD = threading.Lock()


def land_as_it_arrives(settings: Settings, bundle: SearchResultBundle, *, source: str,
                       purpose: str) -> LandingReport:
    """Land a bundle this process just searched for, before returning, in
    one commit with the bundles of the same task that other threads brought
    meanwhile: while one commit is under way the next arrivals wait, then
    land together. Each bundle still lands whole before its caller goes on,
    and a search stage makes a few commits rather than one per call."""
    with _ARRIVALS_GUARD:
        arrivals = _ARRIVALS.setdefault((settings.catalog_location, str(settings.lake_root), bundle.task_id),
                                        _Arrivals())
    arrival = _Arrival(bundle)
    with arrivals.guard:
        arrivals.waiting.append(arrival)
    with arrivals.landing:
        if arrival.report is None and arrival.error is None:  # no other thread landed it meanwhile
            with arrivals.guard:
                batch, arrivals.waiting = arrivals.waiting, []
            _land_arrivals(settings, batch, source, purpose)
    if arrival.error is not None:
        raise arrival.error
    return arrival.report


def _land_arrivals(settings: Settings, batch: list[_Arrival], source: str, purpose: str) -> None:
    try:
        with open_catalog(settings, purpose) as catalog:
            report = land_bundles(catalog, [arrival.bundle for arrival in batch], source=source)
    except BaseException as exc:
        for arrival in batch:
            arrival.error = exc
        raise
    for arrival in batch:
        arrival.report = report
