"""Landing: write validated bundles into the lake atomically.

A batch of bundles becomes one Parquet file of items per task, one raw JSON
file per bundle, and catalog rows, all committed in one transaction. A file
that cannot land goes to quarantine with a machine-readable reason; the rest
of the batch still lands.

Bundles are read and validated by tasks.lake.validation, in worker processes for
large sets of files; a full batch then lands in a thread while the workers go
on with the next.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from schemas import rows
from schemas.bundle import SearchResultBundle
from tasks.lake.catalog import Catalog
from tasks.lake.files import Lake, LakeWrite
from tasks.lake.validation import (FileRoots, ReadyBundle, Refusal, Submission, expand_paths, item_columns,
                                   library_roots, prepared, read_submissions, same_document, workers_for)

BATCH_ITEMS = 250_000
# Row groups are DuckDB's unit of parallel reading: several per results file
# let consolidation read one file on every core.
RESULTS_ROW_GROUP = 64 * 1024
_DIGITS = re.compile(r"\d+")


def natural_sort_key(query_id: str) -> str:
    """q2 sorts before q10: digit runs are zero-padded to 20 places."""
    return _DIGITS.sub(lambda m: m.group().zfill(20), query_id)


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


# -- landing ----------------------------------------------------------------

def land_files(catalog: Catalog, paths: Iterable[str | Path], *, task_id: str | None = None,
               replace: bool = False, batch_items: int = BATCH_ITEMS,
               libraries: Iterable[str | Path] = ()) -> LandingReport:
    """Land bundle files written by others. Their file: URLs must lie inside
    a library folder: SEARCHLAKE_LIBRARY or one of `libraries`."""
    files, missing = expand_paths(paths)
    report = LandingReport(refused=list(missing))
    roots = library_roots([catalog.settings.library, *libraries])
    report.merge(land_submissions(catalog, read_submissions(files), task_id=task_id, replace=replace,
                                  batch_items=batch_items, workers=workers_for(files), file_roots=roots))
    return report


def land_bundles(catalog: Catalog, bundles: Iterable[SearchResultBundle], *, source: str,
                 replace: bool = False) -> LandingReport:
    """Land the bundles this process searched for (their file: URLs are the
    library's own documents)."""
    subs = (Submission(f"{source}:{b.query_id}", b.model_dump_json(exclude_none=True).encode())
            for b in bundles)
    return land_submissions(catalog, subs, task_id=None, replace=replace)


def land_submissions(catalog: Catalog, submissions: Iterable[Submission | Refusal], *,
                     task_id: str | None, replace: bool, batch_items: int = BATCH_ITEMS,
                     workers: int = 1, file_roots: FileRoots = None) -> LandingReport:
    report = LandingReport()
    batch: list[ReadyBundle] = []
    refused: list[Refusal] = []
    size = 0
    # With workers, a full batch lands in a thread (one at a time, in order)
    # while the workers go on with the next one.
    lander = ThreadPoolExecutor(1) if workers > 1 else None
    landing: Future | None = None
    try:
        for outcome in prepared(submissions, task_id, workers, file_roots):
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


# -- one batch: plan, stage, record -----------------------------------------

@dataclass
class _Plan:
    new: list[ReadyBundle] = field(default_factory=list)
    replacing: list[tuple[ReadyBundle, tuple]] = field(default_factory=list)
    unchanged: list[ReadyBundle] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def _plan(catalog: Catalog, batch: list[ReadyBundle], replace: bool) -> _Plan:
    plan = _Plan()
    seen: dict[tuple[str, str], ReadyBundle] = {}
    landed = _landed_bundles(catalog, {(cand.task_id, cand.query_id) for cand in batch})
    for cand in batch:
        key = (cand.task_id, cand.query_id)
        if key in seen:
            if _same_bundle(cand, seen[key].content_hash, lambda: seen[key].raw):
                plan.unchanged.append(cand)
            else:
                plan.refused.append(_conflict(cand, "another file in this batch has the same task_id and query_id"))
            continue
        seen[key] = cand
        existing = landed.get(key)
        if not existing:
            plan.new.append(cand)
        elif _same_bundle(cand, existing[0][1], lambda: catalog.lake.read_bytes(existing[0][3])):
            plan.unchanged.append(cand)
        elif replace:
            plan.replacing.append((cand, existing[0]))
        else:
            plan.refused.append(_conflict(cand, "a different bundle already landed under this task_id and query_id (use --replace)"))
    return plan


def _same_bundle(cand: ReadyBundle, other_hash: str, other_raw) -> bool:
    """The same bytes, or the same JSON written with other whitespace, key
    order or number spelling (compared only when the bytes differ)."""
    if cand.content_hash == other_hash:
        return True
    try:
        return same_document(cand.raw, other_raw())
    except OSError:  # the landed raw file is gone: nothing to compare with
        return False


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


def _conflict(cand: ReadyBundle, message: str) -> Refusal:
    return Refusal(cand.source, "conflict", message, field="query_id", task_id=cand.task_id,
                   query_id=cand.query_id, raw=cand.raw)


# A results file rewritten without the rows of replaced bundles: (old file,
# new file or None when no row is left, task, rows).
_Rewrite = tuple[str, str | None, str, int]


def _land_batch(catalog: Catalog, batch: list[ReadyBundle], refused: list[Refusal], replace: bool) -> LandingReport:
    plan = _plan(catalog, batch, replace)
    refused = refused + plan.refused
    landing = plan.new + [cand for cand, _ in plan.replacing]
    write = LakeWrite(catalog.lake)
    results_files = _stage_landing(catalog.lake, write, landing)
    rewrites = _stage_rewrites(catalog, write, plan.replacing)
    quarantined = [(r, _stage_quarantine(write, r)) for r in refused]

    def record(cat: Catalog) -> None:
        seq = cat.rows("next_landing_seq")[0][0]
        _record_replaced(cat, write, plan.replacing)
        _record_rewrites(cat, write, rewrites)
        for task, (key, n) in results_files.items():
            cat.run("lake_file_add", [key, "results", task, n])
        if landing:
            with _registered(cat, "landing_bundles", _bundle_rows(landing, results_files, seq)):
                cat.run("bundle_insert_batch")
        _record_quarantined(cat, quarantined)

    catalog.commit_write(write, record)
    return LandingReport(
        landed=[(c.task_id, c.query_id, c.header.item_count) for c in landing],
        replaced=[(c.task_id, c.query_id) for c, _ in plan.replacing],
        unchanged=[(c.task_id, c.query_id) for c in plan.unchanged],
        refused=refused,
    )


def _stage_landing(lake: Lake, write: LakeWrite, landing: list[ReadyBundle]) -> dict[str, tuple[str, int]]:
    """Stage each bundle's raw JSON and one results file per task; returns
    {task: (results file, rows)}."""
    by_task: dict[str, list[ReadyBundle]] = defaultdict(list)
    for cand in landing:
        by_task[cand.task_id].append(cand)
        write.stage_bytes(Lake.raw_key(cand.task_id, cand.query_id, cand.content_hash), cand.raw)
    results_files: dict[str, tuple[str, int]] = {}
    for task, cands in by_task.items():
        key = Lake.results_key(task, write.txn)
        table = results_table(cands)
        lake.write_parquet(write.staged(key), table, row_group_size=RESULTS_ROW_GROUP)
        results_files[task] = (key, table.num_rows)
    return results_files


def _stage_rewrites(catalog: Catalog, write: LakeWrite,
                    replacing: list[tuple[ReadyBundle, tuple]]) -> list[_Rewrite]:
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


def _stage_quarantine(write: LakeWrite, refusal: Refusal) -> str | None:
    if refusal.raw is None:
        return None
    suffix = Path(refusal.source).suffix[:10] if "." in Path(refusal.source).name else ".json"
    key = Lake.quarantine_key(_sha(refusal.raw), suffix or ".json")  # type: ignore[arg-type]
    write.stage_bytes(key, refusal.raw)
    return key


def _sha(raw: bytes | None) -> str | None:
    return hashlib.sha256(raw).hexdigest() if raw is not None else None


def _record_replaced(cat: Catalog, write: LakeWrite, replacing: list[tuple[ReadyBundle, tuple]]) -> None:
    for cand, (old_uid, _hash, _file, old_raw) in replacing:
        cat.run("bundle_delete", [old_uid])
        # Consolidation is incremental and may already hold the replaced rows:
        # the task's next consolidation starts over.
        cat.run("cursor_mark_rebuild", [cand.task_id])
        if old_raw:
            write.delete_after_commit(old_raw)


def _record_rewrites(cat: Catalog, write: LakeWrite, rewrites: list[_Rewrite]) -> None:
    for old, new, task, n in rewrites:
        cat.run("lake_file_remove", [old])
        if new:
            cat.run("lake_file_add", [new, "results", task, n])
            cat.run("bundle_move_results_file", [new, old])
        write.delete_after_commit(old)


def _record_quarantined(cat: Catalog, quarantined: list[tuple[Refusal, str | None]]) -> None:
    for refusal, stored in quarantined:
        cat.run("quarantine_add", [
            refusal.source, stored, _sha(refusal.raw), refusal.task_id, refusal.query_id,
            refusal.reason, refusal.field, refusal.item_index, refusal.message,
            json.dumps(list(refusal.errors)),
        ])


# -- Arrow rows -------------------------------------------------------------

_BUNDLE_ROWS = pa.schema([
    ("bundle_uid", pa.string()), ("task_id", pa.string()), ("query_id", pa.string()),
    ("query_sort_key", pa.string()), ("query_text", pa.string()), ("query_intent", pa.string()),
    ("provider", pa.string()), ("executed_at", pa.timestamp("us", tz="UTC")), ("item_count", pa.int64()),
    ("total_returned", pa.int64()), ("kept_after_filter", pa.int64()), ("failed_count", pa.int64()),
    ("dedup_count", pa.int64()), ("duration_ms", pa.int64()), ("content_hash", pa.string()), ("raw_path", pa.string()),
    ("results_file", pa.string()), ("source_file", pa.string()), ("landing_seq", pa.int64()),
])


def _bundle_rows(cands: list[ReadyBundle], results_files: dict[str, tuple[str, int]], seq: int) -> pa.Table:
    """The bundle_catalog rows of the landed bundles (landed_at is the commit's now())."""
    records = []
    for cand in cands:
        h = cand.header
        records.append((
            cand.uid, h.task_id, h.query_id, natural_sort_key(h.query_id), h.query_text, h.query_intent,
            h.provider, h.executed_at, h.item_count, h.total_returned, h.kept_after_filter,
            h.failed_count, h.dedup_count, h.duration_ms, cand.content_hash,
            Lake.raw_key(h.task_id, h.query_id, cand.content_hash), results_files[h.task_id][0],
            cand.source, seq,
        ))
    columns = zip(*records)
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, _BUNDLE_ROWS)], schema=_BUNDLE_ROWS)


def results_table(cands: list[ReadyBundle]) -> pa.Table:
    tables = [_bundle_items(cand) for cand in cands]
    return pa.concat_tables(tables) if tables else rows.RESULTS.empty_table()


_BUNDLE_COLUMNS = ("task_id", "query_id", "query_sort_key", "query_text", "query_intent", "provider",
                   "executed_at", "bundle_uid")


def _bundle_items(cand: ReadyBundle) -> pa.Table:
    """One bundle's rows of the results file: its fields repeated, then its items."""
    items = cand.items if cand.items is not None else item_columns(cand.bundle)  # type: ignore[arg-type]
    count = items.num_rows
    h = cand.header
    values = (h.task_id, h.query_id, natural_sort_key(h.query_id), h.query_text, h.query_intent,
              h.provider, h.executed_at, cand.uid)
    arrays = [pa.repeat(pa.scalar(value, rows.RESULTS.field(name).type), count)
              for name, value in zip(_BUNDLE_COLUMNS, values)]
    arrays.append(pa.array(range(count), pa.int32()))
    arrays += items.columns
    return pa.Table.from_arrays(arrays, schema=rows.RESULTS)


