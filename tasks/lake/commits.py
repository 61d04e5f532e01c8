"""What each commit says about itself in the lake's history (`searchlake
history`, DuckLake's snapshots()): who made it, what it did, which tasks it
concerns."""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class _Scope:
    label: str | None
    task_id: str | None
    flow_run_id: str | None


_SCOPES: ContextVar[tuple[_Scope, ...]] = ContextVar("commit_scopes", default=())


@contextmanager
def commit_scope(label: str | None = None, *, task_id: str | None = None,
                 flow_run_id: str | None = None) -> Iterator[None]:
    """Every commit made inside (in this thread, and in the threads of the
    Prefect tasks it starts: they copy its context) belongs to what the
    scope names: its message starts with `label` ("research T run R"), it
    concerns `task_id`, and its author names the flow run."""
    token = _SCOPES.set(_SCOPES.get() + (_Scope(label, task_id, flow_run_id),))
    try:
        yield
    finally:
        _SCOPES.reset(token)


def current_flow_run() -> str | None:
    """The Prefect flow run the commits made now belong to (commit_scope), if any."""
    flow_runs = [scope.flow_run_id for scope in _SCOPES.get() if scope.flow_run_id]
    return flow_runs[-1] if flow_runs else None


def commit_author() -> str:
    """Who commits: user@host, and the Prefect flow run when inside one.
    Never anything of the settings (a catalog's connection string may hold
    a password)."""
    who = f"{_user()}@{socket.gethostname()}"
    flow_run = current_flow_run()
    return f"{who} flow-run {flow_run}" if flow_run else who


def commit_description(action: str, detail: str = "", *, task_id: str | None = None,
                       task_ids: Iterable[str] = ()) -> tuple[str, str, str | None]:
    """(author, message, extra info) of a commit: "consolidate T: 21
    sources", after the enclosing commit_scope labels; the tasks it
    concerns are kept in its extra info, for finding it by task."""
    scopes = _SCOPES.get()
    named = task_id is not None and all(scope.task_id != task_id for scope in scopes)
    head = f"{action} {task_id}" if named else action
    message = ": ".join([*(s.label for s in scopes if s.label), f"{head}: {detail}" if detail else head])
    tasks = sorted({*task_ids, *([task_id] if task_id else []), *(s.task_id for s in scopes if s.task_id)})
    return commit_author(), message, json.dumps({"tasks": tasks}) if tasks else None


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid with no name (some containers)
        return f"uid{os.getuid()}"
