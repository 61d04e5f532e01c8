"""Waiting out a catalog that is contended for a moment: the work runs again
after a random and growing pause (tenacity), while what it raised is a
CatalogContended, the transient errors of the engine (tasks/lake/engine_errors.py).

Another connection holding the catalog (LockContention) is waited for up to
the lock timeout; a race with other writers (CommitConflict, AttachRace) is
tried again a given number of times. What is left after that is CatalogBusy."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_random_exponential

from tasks.common.settings import Settings
from tasks.lake.engine_errors import CatalogContended, LockContention, busy, holder_of

T = TypeVar("T")
# Whole units of work are re-run when a commit conflicts with another
# writer's (DuckLake itself retries commits that do not conflict).
CONFLICT_RETRIES = 12
ATTACH_ATTEMPTS = 5
# Pauses between tries grow up to this (seconds), each a random share of it,
# so that writers that met do not meet again.
LONGEST_PAUSE = 1.0


def run_again_when_contended(attempt_once: Callable[[], T], settings: Settings,
                             race_attempts: int = CONFLICT_RETRIES + 1) -> T:
    """attempt_once() (which raises the engine's errors translated), again
    while it is contended; CatalogBusy when that does not end."""
    try:
        return retrying(settings, race_attempts)(attempt_once)
    except CatalogContended as exc:
        raise busy(settings, exc) from exc


def retrying(settings: Settings, race_attempts: int) -> Retrying:
    """Tries again after a CatalogContended: a held catalog until the lock
    timeout has passed, a race up to `race_attempts` tries. The first wait
    for a held catalog is said on stderr, as a wait for the file lock is."""
    said = False

    def give_up(state: RetryCallState) -> bool:
        if isinstance(state.outcome.exception(), LockContention):
            return state.seconds_since_start >= settings.lock_timeout
        return state.attempt_number >= race_attempts

    def say_waiting(state: RetryCallState) -> None:
        nonlocal said
        exc = state.outcome.exception()
        if isinstance(exc, LockContention) and not said:
            said = True
            print(f"waiting for the catalog, {holder_of(exc)}", file=sys.stderr)

    return Retrying(retry=retry_if_exception_type(CatalogContended), stop=give_up,
                    wait=wait_random_exponential(multiplier=0.02, max=LONGEST_PAUSE),
                    before_sleep=say_waiting, reraise=True)
