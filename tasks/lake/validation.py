"""Validation: read bundle files and check them against the contract.

Each submission becomes a ReadyBundle (a valid bundle, ready to land) or a
Refusal with a machine-readable reason; tasks.lake.landing writes them into the
lake.

Speed without a change of verdict: a bundle is first checked by a stricter
twin of the contract that runs inside pydantic-core (schemas.bundle
FAST_BUNDLE) and converted to Arrow columns as a whole; anything the twin
does not accept goes through SearchResultBundle as before. Large sets of files
are checked in forked worker processes.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import multiprocessing
import os
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import TypeAdapter, ValidationError

from schemas import rows
from schemas.bundle import FAST_BUNDLE, SearchResultBundle, to_utc
from schemas.urls import UnsafeURL, source_id_for

# Validating and converting bundles is CPU work: for a big enough set of
# files it runs in this many worker processes (forked, so they start at once).
WORKERS = min(2, os.cpu_count() or 1)
POOL_MIN_BYTES = 4 << 20  # below this a pool costs more than it saves
POOL_WINDOW_BYTES = 64 << 20  # raw bytes handed to the workers and not yet taken back


@dataclass(frozen=True)
class Submission:
    source: str
    raw: bytes


@dataclass(frozen=True)
class Refusal:
    source: str
    reason: str
    message: str
    field: str | None = None
    item_index: int | None = None
    task_id: str | None = None
    query_id: str | None = None
    errors: tuple[dict, ...] = ()
    raw: bytes | None = None

    def line(self) -> str:
        where = f" {self.field}" if self.field else ""
        return f"refused {self.source}: {self.reason}{where}: {self.message}"


@dataclass(frozen=True)
class BundleHeader:
    """What the catalog records of a bundle besides its items."""

    task_id: str
    query_id: str
    query_text: str
    query_intent: str | None
    provider: str
    executed_at: datetime
    item_count: int
    total_returned: int
    kept_after_filter: int
    failed_count: int
    dedup_count: int
    duration_ms: int | None = None

    @classmethod
    def of(cls, bundle: SearchResultBundle) -> "BundleHeader":
        s = bundle.stats
        return cls(bundle.task_id, bundle.query_id, bundle.query_text, bundle.query_intent,  # type: ignore[arg-type]
                   bundle.provider, bundle.executed_at, len(bundle.results), s.total_returned,
                   s.kept_after_filter, s.failed_count, s.dedup_count, s.duration_ms)


@dataclass
class ReadyBundle:
    """A valid bundle, ready to land. `bundle` is None when the fast path
    validated it; `items` then holds its items as Arrow columns."""

    source: str
    raw: bytes
    bundle: SearchResultBundle | None
    content_hash: str
    header: BundleHeader = None  # type: ignore[assignment]  # from `bundle` when not given
    items: pa.Table | None = None

    def __post_init__(self) -> None:
        if self.header is None:
            self.header = BundleHeader.of(self.bundle)  # type: ignore[arg-type]

    @property
    def task_id(self) -> str:
        return self.header.task_id

    @property
    def query_id(self) -> str:
        return self.header.query_id

    @property
    def uid(self) -> str:
        key = f"{self.task_id}\0{self.query_id}\0{self.content_hash}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]


# -- reading ----------------------------------------------------------------

def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[Refusal]]:
    files: list[Path] = []
    missing: list[Refusal] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.json") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            missing.append(Refusal(str(path), "not_found", "no such file or folder"))
    return files, missing


def read_submissions(files: Iterable[Path]) -> Iterator[Submission | Refusal]:
    for path in files:
        try:
            yield Submission(str(path), path.read_bytes())
        except OSError as exc:
            yield Refusal(str(path), "unreadable", exc.strerror or str(exc))


# -- validating -------------------------------------------------------------

def validate(sub: Submission, default_task_id: str | None) -> ReadyBundle | Refusal:
    try:
        bundle = SearchResultBundle.model_validate_json(sub.raw)
    except ValidationError as exc:
        return _refusal_from_errors(sub, exc)
    if bundle.task_id is None:
        if default_task_id is None:
            return Refusal(sub.source, "missing_task", "the bundle names no task_id and no --task-id was given",
                           field="task_id", query_id=bundle.query_id, raw=sub.raw)
        bundle.task_id = default_task_id
    return ReadyBundle(sub.source, sub.raw, bundle, hashlib.sha256(sub.raw).hexdigest())


def prepare(sub: Submission, default_task_id: str | None) -> ReadyBundle | Refusal:
    """validate(), by the fast path when the bundle allows it (same verdict,
    same values): its items then come back as Arrow columns."""
    fast = _fast_candidate(sub, default_task_id)
    return fast if fast is not None else validate(sub, default_task_id)


_ITEMS = pa.schema([rows.RESULTS.field(name) for name in rows.ITEM_FIELDS])
_TIMES = [name for name in rows.ITEM_FIELDS if _ITEMS.field(name).type == rows.RESULTS.field("executed_at").type]
# The fast path's items as it reads them: timestamps still text.
_ITEMS_TEXT_TIMES = pa.schema([pa.field(f.name, pa.string()) if f.name in _TIMES else f for f in _ITEMS])
_DATETIME = TypeAdapter(datetime)  # the lax parse of Timestamp's inner validator


def item_columns(bundle: SearchResultBundle) -> pa.Table:
    """A validated bundle's items as Arrow columns (the fast path's `items`)."""
    items = [item.__dict__ for item in bundle.results]
    return pa.Table.from_pydict({name: [item[name] for item in items] for name in rows.ITEM_FIELDS}, schema=_ITEMS)


def _fast_candidate(sub: Submission, default_task_id: str | None) -> ReadyBundle | None:
    """The bundle checked by schemas.bundle.FAST_BUNDLE, which accepts a subset
    of what SearchResultBundle does; None means "ask validate()", which gives
    the real verdict (a refusal, or an exception, stays validate()'s)."""
    if FAST_BUNDLE is None:
        return None
    try:
        doc = FAST_BUNDLE.validate_json(sub.raw)
    except ValidationError:
        return None
    task_id = doc.get("task_id")
    if task_id is None:
        if default_task_id is None:
            return None
        task_id = default_task_id
    try:
        executed_at = to_utc(_DATETIME.validate_python(doc["executed_at"]))
        items = _fast_items(doc["results"])
    except Exception:  # let validate() and results_table() say what is wrong
        return None
    if items is None:
        return None
    stats = doc.get("stats")
    if stats is None:
        stats = _stats_of(items)
    header = BundleHeader(
        task_id, doc["query_id"], doc["query_text"], doc.get("query_intent"), doc["provider"],
        executed_at, items.num_rows, stats.get("total_returned", 0), stats.get("kept_after_filter", 0),
        stats.get("failed_count", 0), stats.get("dedup_count", 0), stats.get("duration_ms"))
    return ReadyBundle(sub.source, sub.raw, None, hashlib.sha256(sub.raw).hexdigest(), header, items)


def _fast_items(results: list[dict]) -> pa.Table | None:
    """FAST_BUNDLE's items as Arrow columns, with the item model rules it
    leaves to us applied; None when an item breaks one (validate() says how)."""
    items = pa.Table.from_pylist(results, schema=_ITEMS_TEXT_TIMES)
    for name in _TIMES:
        at = items.schema.get_field_index(name)
        items = items.set_column(at, _ITEMS.field(name), pc.cast(items.column(at), _ITEMS.field(name).type))
    if _failed_without_error_code(items):
        return None
    return _with_derived_source_ids(items)


def _failed_without_error_code(items: pa.Table) -> bool:
    """SearchResultItem: a failed item needs an error_code."""
    failed = pc.equal(items.column("status"), "failed")
    if not pc.any(failed).as_py():  # the common case: no failed item, no need to look further
        return False
    code = items.column("error_code")
    return bool(pc.any(pc.and_kleene(failed, pc.or_kleene(pc.is_null(code), pc.equal(code, "")))).as_py())


def _with_derived_source_ids(items: pa.Table) -> pa.Table:
    """A missing source_id is derived from the URL (SearchResultItem's rule)."""
    column = items.column("source_id")
    if not column.null_count:
        return items
    ids = column.to_pylist()
    urls = items.column("url").to_pylist()
    for i, value in enumerate(ids):
        if value is None:
            ids[i] = source_id_for(urls[i])
    return items.set_column(items.schema.get_field_index("source_id"), _ITEMS.field("source_id"),
                            pa.array(ids, pa.string()))


def _stats_of(items: pa.Table) -> dict:
    """SearchResultStats.of(results), for a bundle that gives no stats."""
    status = items.column("status")
    return {"total_returned": items.num_rows, "kept_after_filter": pc.sum(pc.equal(status, "ok")).as_py() or 0,
            "failed_count": pc.sum(pc.equal(status, "failed")).as_py() or 0, "dedup_count": 0}


# -- refusals ---------------------------------------------------------------

def _format_loc(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _reason(error: dict) -> str:
    kind = error["type"]
    if kind == "json_invalid":
        return "truncated" if "EOF" in error["msg"] else "not_json"
    if kind == "missing":
        return "missing_field"
    if isinstance(error.get("ctx", {}).get("error"), UnsafeURL):
        return "unsafe_url"
    return "invalid_value"


def _refusal_from_errors(sub: Submission, exc: ValidationError) -> Refusal:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    loc = first["loc"]
    item_index = loc[1] if len(loc) > 1 and loc[0] == "results" and isinstance(loc[1], int) else None
    task_id, query_id = _ids_if_readable(sub.raw)
    return Refusal(
        sub.source, _reason(first), first["msg"], field=_format_loc(loc) or None, item_index=item_index,
        task_id=task_id, query_id=query_id, raw=sub.raw,
        errors=tuple({"field": _format_loc(e["loc"]), "type": _reason(e), "message": e["msg"]} for e in errors),
    )


def _ids_if_readable(raw: bytes) -> tuple[str | None, str | None]:
    try:
        doc = json.loads(raw)
    except ValueError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    ids = (doc.get("task_id"), doc.get("query_id"))
    return tuple(v if isinstance(v, str) else None for v in ids)  # type: ignore[return-value]


# -- worker processes -------------------------------------------------------

def workers_for(files: list[Path]) -> int:
    """How many processes prepared() should use for these files."""
    if WORKERS < 2 or len(files) < 2 * WORKERS:
        return 1
    total = 0
    for path in files:
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if total >= POOL_MIN_BYTES:
            return WORKERS
    return 1


def prepared(submissions: Iterable[Submission | Refusal], task_id: str | None,
             workers: int) -> Iterator[ReadyBundle | Refusal]:
    """prepare() of each submission, in order; in worker processes when asked
    (in this process again if a worker dies)."""
    if workers < 2:
        return (sub if isinstance(sub, Refusal) else prepare(sub, task_id) for sub in submissions)
    return _prepared_in_pool(submissions, task_id, workers)


def _prepared_in_pool(submissions: Iterable[Submission | Refusal], task_id: str | None,
                      workers: int) -> Iterator[ReadyBundle | Refusal]:
    # fork: the workers start at once and only run this module's pure Python
    # and Arrow code; they never touch the catalog connection they inherit.
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_worker_started)
    pending: deque[tuple[Submission | Refusal, Future | None]] = deque()
    in_flight = 0
    broken = False

    def submit(sub: Submission) -> Future | None:
        if broken:
            return None
        with warnings.catch_warnings():  # Python >= 3.12 warns of fork() beside DuckDB's threads
            warnings.filterwarnings("ignore", r".*multi-threaded.*fork\(\)", DeprecationWarning)
            return pool.submit(_prepare_detached, sub.source, sub.raw, task_id)

    def outcome(sub: Submission | Refusal, future: Future | None) -> ReadyBundle | Refusal:
        nonlocal broken
        if isinstance(sub, Refusal):
            return sub
        if future is not None and not broken:
            try:
                return _attached(sub, future)
            except BrokenProcessPool:
                broken = True
        return prepare(sub, task_id)

    try:
        for sub in submissions:
            future = None if isinstance(sub, Refusal) else submit(sub)
            pending.append((sub, future))
            in_flight += len(sub.raw) if future is not None else 0  # type: ignore[union-attr]
            while pending and (in_flight > POOL_WINDOW_BYTES or pending[0][1] is None or pending[0][1].done()):
                done, future = pending.popleft()
                if future is not None:
                    in_flight -= len(done.raw)  # type: ignore[union-attr]
                yield outcome(done, future)
        while pending:
            yield outcome(*pending.popleft())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _worker_started() -> None:
    # The objects inherited from the parent are not this worker's garbage:
    # keep the collector off them (and their copy-on-write pages).
    gc.freeze()


def _prepare_detached(source: str, raw: bytes, task_id: str | None) -> tuple[ReadyBundle | Refusal, bool]:
    """prepare() in a worker: the outcome travels back without the raw bytes
    (the caller has them), and a candidate with its items as Arrow columns."""
    outcome = prepare(Submission(source, raw), task_id)
    if isinstance(outcome, Refusal):
        if outcome.raw is raw:
            return dataclasses.replace(outcome, raw=None), True
        return outcome, False
    if outcome.items is None:
        try:
            outcome.items = item_columns(outcome.bundle)  # type: ignore[arg-type]
            outcome.bundle = None
        except Exception:  # noqa: BLE001 - results_table() raises it where it always did
            pass
    outcome.raw = b""
    return outcome, True


def _attached(sub: Submission, future: Future) -> ReadyBundle | Refusal:
    outcome, detached = future.result()
    if detached:
        if isinstance(outcome, Refusal):
            return dataclasses.replace(outcome, raw=sub.raw)
        outcome.raw = sub.raw
    return outcome
