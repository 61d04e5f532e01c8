"""Landing: validate bundle files and write them into the lake atomically.

A batch of bundles becomes one Parquet file of items per task, one raw JSON
file per bundle, and catalog rows, all committed in one transaction. A file
that cannot land goes to quarantine with a machine-readable reason; the rest
of the batch still lands.

Speed without a change of verdict: a bundle is first checked by a stricter
twin of the contract that runs inside pydantic-core (schemas.bundle
FAST_BUNDLE) and converted to Arrow columns as a whole; anything the twin
does not accept goes through SearchResultBundle as before. Large sets of files
are checked in forked worker processes, and a full batch lands in a thread
while the workers go on with the next.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import multiprocessing
import os
import re
import warnings
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import TypeAdapter, ValidationError

from schemas import rows
from schemas.bundle import FAST_BUNDLE, SearchResultBundle, to_utc
from schemas.urls import UnsafeURL, source_id_for
from tasks.catalog import Catalog
from tasks.lake import Lake, LakeWrite

BATCH_ITEMS = 250_000
# Validating and converting bundles is CPU work: for a big enough set of
# files it runs in this many worker processes (forked, so they start at once).
LANDING_WORKERS = min(2, os.cpu_count() or 1)
POOL_MIN_BYTES = 4 << 20  # below this a pool costs more than it saves
POOL_WINDOW_BYTES = 64 << 20  # raw bytes handed to the workers and not yet landed
# Row groups are DuckDB's unit of parallel reading: several per results file
# let consolidation read one file on every core.
RESULTS_ROW_GROUP = 64 * 1024
_DIGITS = re.compile(r"\d+")


def natural_sort_key(query_id: str) -> str:
    """q2 sorts before q10: digit runs are zero-padded to 20 places."""
    return _DIGITS.sub(lambda m: m.group().zfill(20), query_id)


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

    @classmethod
    def of(cls, bundle: SearchResultBundle) -> "BundleHeader":
        s = bundle.stats
        return cls(bundle.task_id, bundle.query_id, bundle.query_text, bundle.query_intent,  # type: ignore[arg-type]
                   bundle.provider, bundle.executed_at, len(bundle.results), s.total_returned,
                   s.kept_after_filter, s.failed_count, s.dedup_count)


@dataclass
class Candidate:
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


@dataclass
class LandingReport:
    landed: list[tuple[str, str, int]] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)

    @property
    def items_landed(self) -> int:
        return sum(n for _, _, n in self.landed)

    @property
    def tasks(self) -> list[str]:
        return sorted({task for task, _, _ in self.landed})

    def merge(self, other: "LandingReport") -> None:
        self.landed += other.landed
        self.replaced += other.replaced
        self.unchanged += other.unchanged
        self.refused += other.refused


# -- reading and validating -------------------------------------------------

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


def validate(sub: Submission, default_task_id: str | None) -> Candidate | Refusal:
    try:
        bundle = SearchResultBundle.model_validate_json(sub.raw)
    except ValidationError as exc:
        return _refusal_from_errors(sub, exc)
    if bundle.task_id is None:
        if default_task_id is None:
            return Refusal(sub.source, "missing_task", "the bundle names no task_id and no --task-id was given",
                           field="task_id", query_id=bundle.query_id, raw=sub.raw)
        bundle.task_id = default_task_id
    return Candidate(sub.source, sub.raw, bundle, hashlib.sha256(sub.raw).hexdigest())


def prepare(sub: Submission, default_task_id: str | None) -> Candidate | Refusal:
    """validate(), by the fast path when the bundle allows it (same verdict,
    same values): its items then come back as Arrow columns."""
    fast = _fast_candidate(sub, default_task_id)
    return fast if fast is not None else validate(sub, default_task_id)


_ITEMS = pa.schema([rows.RESULTS.field(name) for name in rows.ITEM_FIELDS])
_TIMES = [name for name in rows.ITEM_FIELDS if _ITEMS.field(name).type == rows.RESULTS.field("executed_at").type]
# The fast path's items as it reads them: timestamps still text.
_ITEMS_TEXT_TIMES = pa.schema([pa.field(f.name, pa.string()) if f.name in _TIMES else f for f in _ITEMS])
_DATETIME = TypeAdapter(datetime)  # the lax parse of Timestamp's inner validator


def _fast_candidate(sub: Submission, default_task_id: str | None) -> Candidate | None:
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
        items = pa.Table.from_pylist(doc["results"], schema=_ITEMS_TEXT_TIMES)
        for name in _TIMES:
            at = items.schema.get_field_index(name)
            items = items.set_column(at, _ITEMS.field(name), pc.cast(items.column(at), _ITEMS.field(name).type))
        status = items.column("status")
        failed = pc.equal(status, "failed")
        failed_count = pc.sum(failed).as_py() or 0
        if failed_count:
            code = items.column("error_code")
            # SearchResultItem: a failed item needs an error_code.
            if pc.any(pc.and_kleene(failed, pc.or_kleene(pc.is_null(code), pc.equal(code, "")))).as_py():
                return None
        items = _with_derived_source_ids(items)
    except Exception:  # let validate() and results_table() say what is wrong
        return None
    count = items.num_rows
    stats = doc.get("stats")
    if stats is None:  # SearchResultStats.of(results)
        stats = {"total_returned": count, "kept_after_filter": pc.sum(pc.equal(status, "ok")).as_py() or 0,
                 "failed_count": failed_count, "dedup_count": 0}
    header = BundleHeader(
        task_id, doc["query_id"], doc["query_text"], doc.get("query_intent"), doc["provider"],
        executed_at, count, stats.get("total_returned", 0), stats.get("kept_after_filter", 0),
        stats.get("failed_count", 0), stats.get("dedup_count", 0))
    return Candidate(sub.source, sub.raw, None, hashlib.sha256(sub.raw).hexdigest(), header, items)


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


# -- landing ----------------------------------------------------------------

def land_files(catalog: Catalog, paths: Iterable[str | Path], *, task_id: str | None = None,
               replace: bool = False, batch_items: int = BATCH_ITEMS) -> LandingReport:
    files, missing = expand_paths(paths)
    report = LandingReport(refused=list(missing))
    report.merge(land_submissions(catalog, read_submissions(files), task_id=task_id,
                                  replace=replace, batch_items=batch_items, workers=_workers_for(files)))
    return report


def _workers_for(files: list[Path]) -> int:
    if LANDING_WORKERS < 2 or len(files) < 2 * LANDING_WORKERS:
        return 1
    total = 0
    for path in files:
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if total >= POOL_MIN_BYTES:
            return LANDING_WORKERS
    return 1


def land_bundles(catalog: Catalog, bundles: Iterable[SearchResultBundle], *, source: str,
                 replace: bool = False) -> LandingReport:
    subs = (Submission(f"{source}:{b.query_id}", b.model_dump_json(exclude_none=True).encode())
            for b in bundles)
    return land_submissions(catalog, subs, task_id=None, replace=replace)


def land_submissions(catalog: Catalog, submissions: Iterable[Submission | Refusal], *,
                     task_id: str | None, replace: bool, batch_items: int = BATCH_ITEMS,
                     workers: int = 1) -> LandingReport:
    report = LandingReport()
    batch: list[Candidate] = []
    refused: list[Refusal] = []
    size = 0
    # With workers, a full batch lands in a thread (one at a time, in order)
    # while the workers go on with the next one.
    lander = ThreadPoolExecutor(1) if workers > 1 else None
    landing: Future | None = None
    try:
        for outcome in _prepared(submissions, task_id, workers):
            if isinstance(outcome, Refusal):
                refused.append(outcome)
                continue
            batch.append(outcome)
            size += outcome.header.item_count
            if size >= batch_items:
                if lander is None:
                    report.merge(_land_batch(catalog, batch, refused, replace))
                else:
                    if landing is not None:
                        report.merge(landing.result())
                    landing = lander.submit(_land_batch, catalog, batch, refused, replace)
                batch, refused, size = [], [], 0
        if landing is not None:
            report.merge(landing.result())
            landing = None
        if batch or refused:
            report.merge(_land_batch(catalog, batch, refused, replace))
    finally:
        if lander is not None:
            lander.shutdown(wait=True)
    return report


def _prepared(submissions: Iterable[Submission | Refusal], task_id: str | None,
              workers: int) -> Iterator[Candidate | Refusal]:
    """prepare() of each submission, in order; in worker processes when asked
    (in this process again if a worker dies)."""
    if workers < 2:
        for sub in submissions:
            yield sub if isinstance(sub, Refusal) else prepare(sub, task_id)
        return
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

    def outcome(sub: Submission | Refusal, future: Future | None) -> Candidate | Refusal:
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


def _prepare_detached(source: str, raw: bytes, task_id: str | None) -> tuple[Candidate | Refusal, bool]:
    """prepare() in a worker: the outcome travels back without the raw bytes
    (the caller has them), and a candidate with its items as Arrow columns."""
    outcome = prepare(Submission(source, raw), task_id)
    if isinstance(outcome, Refusal):
        if outcome.raw is raw:
            return dataclasses.replace(outcome, raw=None), True
        return outcome, False
    if outcome.items is None:
        try:
            outcome.items = _item_columns(outcome.bundle)  # type: ignore[arg-type]
            outcome.bundle = None
        except Exception:  # noqa: BLE001 - results_table() raises it where it always did
            pass
    outcome.raw = b""
    return outcome, True


def _attached(sub: Submission, future: Future) -> Candidate | Refusal:
    outcome, detached = future.result()
    if detached:
        if isinstance(outcome, Refusal):
            return dataclasses.replace(outcome, raw=sub.raw)
        outcome.raw = sub.raw
    return outcome


@dataclass
class _Plan:
    new: list[Candidate] = field(default_factory=list)
    replacing: list[tuple[Candidate, tuple]] = field(default_factory=list)
    unchanged: list[Candidate] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def _plan(catalog: Catalog, batch: list[Candidate], replace: bool) -> _Plan:
    plan = _Plan()
    seen: dict[tuple[str, str], str] = {}
    landed = _landed_bundles(catalog, {(cand.task_id, cand.query_id) for cand in batch})
    for cand in batch:
        key = (cand.task_id, cand.query_id)
        if key in seen:
            if seen[key] == cand.content_hash:
                plan.unchanged.append(cand)
            else:
                plan.refused.append(_conflict(cand, "another file in this batch has the same task_id and query_id"))
            continue
        seen[key] = cand.content_hash
        existing = landed.get(key)
        if not existing:
            plan.new.append(cand)
        elif existing[0][1] == cand.content_hash:
            plan.unchanged.append(cand)
        elif replace:
            plan.replacing.append((cand, existing[0]))
        else:
            plan.refused.append(_conflict(cand, "a different bundle already landed under this task_id and query_id (use --replace)"))
    return plan


def _landed_bundles(catalog: Catalog, keys: set[tuple[str, str]]) -> dict[tuple[str, str], list[tuple]]:
    """bundle_lookup for every (task_id, query_id) of a batch, in one query."""
    if not keys:
        return {}
    task_ids, query_ids = zip(*sorted(keys))
    table = pa.table({"task_id": pa.array(task_ids, pa.string()), "query_id": pa.array(query_ids, pa.string())})
    found: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    with _registered(catalog, "landing_keys", table):
        for task, query, *row in catalog.rows("bundle_lookup_batch"):
            found[(task, query)].append(tuple(row))
    return found


class _registered:
    """An Arrow table visible to the catalog's SQL under `name` for a while."""

    def __init__(self, catalog: Catalog, name: str, table: pa.Table):
        self.con, self.name, self.table = catalog.con, name, table

    def __enter__(self) -> None:
        self.con.register(self.name, self.table)

    def __exit__(self, *exc) -> None:
        self.con.unregister(self.name)


def _conflict(cand: Candidate, message: str) -> Refusal:
    return Refusal(cand.source, "conflict", message, field="query_id", task_id=cand.task_id,
                   query_id=cand.query_id, raw=cand.raw)


def _land_batch(catalog: Catalog, batch: list[Candidate], refused: list[Refusal], replace: bool) -> LandingReport:
    plan = _plan(catalog, batch, replace)
    refused = refused + plan.refused
    landing = plan.new + [cand for cand, _ in plan.replacing]
    lake = catalog.lake
    write = LakeWrite(lake)
    by_task: dict[str, list[Candidate]] = defaultdict(list)
    for cand in landing:
        by_task[cand.task_id].append(cand)
        write.stage_bytes(Lake.raw_key(cand.task_id, cand.query_id, cand.content_hash), cand.raw)
    results_files: dict[str, tuple[str, int]] = {}
    for task, cands in by_task.items():
        key = Lake.results_key(task, write.txn)
        table = results_table(cands)
        lake.write_parquet(write.staged(key), table, row_group_size=RESULTS_ROW_GROUP)
        results_files[task] = (key, table.num_rows)
    rewrites = _stage_rewrites(catalog, write, plan.replacing)
    quarantined = [(r, _stage_quarantine(write, r)) for r in refused]

    def record(cat: Catalog) -> None:
        seq = cat.rows("next_landing_seq")[0][0]
        for cand, (old_uid, _hash, _file, old_raw) in plan.replacing:
            cat.run("bundle_delete", [old_uid])
            cat.run("cursor_mark_rebuild", [cand.task_id])
            if old_raw:
                write.delete_after_commit(old_raw)
        for old, new, task, n in rewrites:
            cat.run("lake_file_remove", [old])
            if new:
                cat.run("lake_file_add", [new, "results", task, n])
                cat.run("bundle_move_results_file", [new, old])
            write.delete_after_commit(old)
        for task, (key, n) in results_files.items():
            cat.run("lake_file_add", [key, "results", task, n])
        if landing:
            with _registered(cat, "landing_bundles", _bundle_rows(landing, results_files, seq)):
                cat.run("bundle_insert_batch")
        for refusal, stored in quarantined:
            cat.run("quarantine_add", [
                refusal.source, stored, _sha(refusal.raw), refusal.task_id, refusal.query_id,
                refusal.reason, refusal.field, refusal.item_index, refusal.message,
                json.dumps(list(refusal.errors)),
            ])

    catalog.commit_write(write, record)
    return LandingReport(
        landed=[(c.task_id, c.query_id, c.header.item_count) for c in landing],
        replaced=[(c.task_id, c.query_id) for c, _ in plan.replacing],
        unchanged=[(c.task_id, c.query_id) for c in plan.unchanged],
        refused=refused,
    )


def _sha(raw: bytes | None) -> str | None:
    return hashlib.sha256(raw).hexdigest() if raw is not None else None


def _stage_quarantine(write: LakeWrite, refusal: Refusal) -> str | None:
    if refusal.raw is None:
        return None
    suffix = Path(refusal.source).suffix[:10] if "." in Path(refusal.source).name else ".json"
    key = Lake.quarantine_key(_sha(refusal.raw), suffix or ".json")  # type: ignore[arg-type]
    write.stage_bytes(key, refusal.raw)
    return key


def _stage_rewrites(catalog: Catalog, write: LakeWrite, replacing: list[tuple[Candidate, tuple]]):
    """Rewrite the results files that hold replaced bundles without their rows."""
    dropped: dict[str, set[str]] = defaultdict(set)
    task_of: dict[str, str] = {}
    for cand, (old_uid, _hash, old_file, _raw) in replacing:
        if old_file:
            dropped[old_file].add(old_uid)
            task_of[old_file] = cand.task_id
    rewrites = []
    lake = catalog.lake
    for old_file, uids in dropped.items():
        table = lake.read_parquet(old_file)
        kept = table.filter(pc.invert(pc.is_in(table["bundle_uid"], pa.array(sorted(uids)))))
        if kept.num_rows == 0:
            rewrites.append((old_file, None, task_of[old_file], 0))
            continue
        new_key = Lake.task_key("results", task_of[old_file], f"part-{write.txn}-r{len(rewrites)}.parquet")
        lake.write_parquet(write.staged(new_key), kept, row_group_size=RESULTS_ROW_GROUP)
        rewrites.append((old_file, new_key, task_of[old_file], kept.num_rows))
    return rewrites


_BUNDLE_ROWS = pa.schema([
    ("bundle_uid", pa.string()), ("task_id", pa.string()), ("query_id", pa.string()),
    ("query_sort_key", pa.string()), ("query_text", pa.string()), ("query_intent", pa.string()),
    ("provider", pa.string()), ("executed_at", pa.timestamp("us", tz="UTC")), ("item_count", pa.int64()),
    ("total_returned", pa.int64()), ("kept_after_filter", pa.int64()), ("failed_count", pa.int64()),
    ("dedup_count", pa.int64()), ("content_hash", pa.string()), ("raw_path", pa.string()),
    ("results_file", pa.string()), ("source_file", pa.string()), ("landing_seq", pa.int64()),
])


def _bundle_rows(cands: list[Candidate], results_files: dict[str, tuple[str, int]], seq: int) -> pa.Table:
    """The bundle_catalog rows of the landed bundles (landed_at is the commit's now())."""
    records = []
    for cand in cands:
        h = cand.header
        records.append((
            cand.uid, h.task_id, h.query_id, natural_sort_key(h.query_id), h.query_text, h.query_intent,
            h.provider, h.executed_at, h.item_count, h.total_returned, h.kept_after_filter,
            h.failed_count, h.dedup_count, cand.content_hash,
            Lake.raw_key(h.task_id, h.query_id, cand.content_hash), results_files[h.task_id][0],
            cand.source, seq,
        ))
    columns = zip(*records)
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, _BUNDLE_ROWS)], schema=_BUNDLE_ROWS)


def results_table(cands: list[Candidate]) -> pa.Table:
    tables = [_bundle_items(cand) for cand in cands]
    return pa.concat_tables(tables) if tables else rows.RESULTS.empty_table()


_BUNDLE_COLUMNS = ("task_id", "query_id", "query_sort_key", "query_text", "query_intent", "provider",
                   "executed_at", "bundle_uid")


def _bundle_items(cand: Candidate) -> pa.Table:
    """One bundle's rows of the results file: its fields repeated, then its items."""
    items = cand.items if cand.items is not None else _item_columns(cand.bundle)  # type: ignore[arg-type]
    count = items.num_rows
    h = cand.header
    values = (h.task_id, h.query_id, natural_sort_key(h.query_id), h.query_text, h.query_intent,
              h.provider, h.executed_at, cand.uid)
    arrays = [pa.repeat(pa.scalar(value, rows.RESULTS.field(name).type), count)
              for name, value in zip(_BUNDLE_COLUMNS, values)]
    arrays.append(pa.array(range(count), pa.int32()))
    arrays += items.columns
    return pa.Table.from_arrays(arrays, schema=rows.RESULTS)


def _item_columns(bundle: SearchResultBundle) -> pa.Table:
    items = [item.__dict__ for item in bundle.results]
    return pa.Table.from_pydict({name: [item[name] for item in items] for name in rows.ITEM_FIELDS}, schema=_ITEMS)
