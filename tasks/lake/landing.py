"""Landing: write validated bundles into the lake atomically.

A batch of bundles becomes rows of the `results` and `bundle_catalog` tables
(one raw JSON file per bundle beside them), committed in one transaction. A file
that cannot land goes to quarantine with a machine-readable reason; the rest
of the batch still lands.

Bundles are read and validated by tasks.lake.validation, in worker processes for
large sets of files; a full batch then lands in a thread while the workers go
on with the next. Bundles a search brings one at a time land together through
tasks.lake.arrivals.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from schemas import rows
from schemas.bundle import SearchResultBundle
from tasks.common.text import counted
from tasks.lake.catalog import Catalog, commit_scope, current_flow_run
from tasks.lake.exports import refresh_exports
from tasks.lake.files import Lake, LakeWrite
from tasks.lake.sqlfiles import records
from tasks.lake.validation import (FileRoots, ReadyBundle, Refusal, Submission, expand_paths, item_columns,
                                   library_roots, read_submissions, same_document)
from tasks.lake.validation_pool import prepared, workers_for

BATCH_ITEMS = 250_000
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
               libraries: Iterable[str | Path] = (), within: str | Path | None = None) -> LandingReport:
    """Land bundle files written by others. Their file: URLs must lie inside
    a library folder: SEARCHLAKE_LIBRARY or one of `libraries`. Files below
    `within` (a landing folder) are read only from inside it."""
    files, missing = expand_paths(paths, within=within)
    report = LandingReport(refused=list(missing))
    roots = library_roots([catalog.settings.library, *libraries])
    with commit_scope(f"ingest {counted(len(files) + len(missing), 'file')}"):
        submissions = read_submissions(files, max_bytes=catalog.settings.max_bundle_bytes)
        report.merge(land_submissions(catalog, submissions, task_id=task_id, replace=replace,
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
                refused.append(outcome.trimmed())  # a refused file's head is all it keeps
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
    for task in report.tasks:
        refresh_exports(catalog, task, ("bundles",))
    return report


# -- one batch: plan, stage, record -----------------------------------------

@dataclass
class _Plan:
    new: list[ReadyBundle] = field(default_factory=list)
    replacing: list[tuple[ReadyBundle, dict]] = field(default_factory=list)  # with the landed row it replaces
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
        elif _same_bundle(cand, existing[0]["content_hash"], lambda: catalog.lake.read_bytes(existing[0]["raw_path"])):
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


def _landed_bundles(catalog: Catalog, keys: set[tuple[str, str]]) -> dict[tuple[str, str], list[dict]]:
    """The landed bundles (rows with bundle_uid, content_hash, raw_path,
    snapshot_id) of every (task_id, query_id) of a batch, first landed first,
    in one query."""
    if not keys:
        return {}
    task_ids, query_ids = zip(*sorted(keys))
    table = pa.table({"task_id": pa.array(task_ids, pa.string()), "query_id": pa.array(query_ids, pa.string())})
    found: dict[tuple[str, str], list[dict]] = defaultdict(list)
    with _registered(catalog, "landing_keys", table):
        for row in records(catalog.run("bundle_lookup_batch")):
            found[(row["task_id"], row["query_id"])].append(row)
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


def _land_batch(catalog: Catalog, batch: list[ReadyBundle], refused: list[Refusal], replace: bool) -> LandingReport:
    """Write the raw files of the bundles that land, and record their rows and
    the refusals in one transaction (planned again from the committed state
    if another writer's commit conflicts)."""
    write = LakeWrite(catalog.lake)

    def record(cat: Catalog) -> _Plan:
        write.deletes.clear()
        plan = _plan(cat, batch, replace)
        quarantined = [(r, _put_quarantined(write, r)) for r in refused + plan.refused]
        _record_replaced(cat, write, plan.replacing)
        landing = plan.new + [cand for cand, _ in plan.replacing]
        for cand in landing:  # named by content: writing the same bytes again on a retry is harmless
            write.put(Lake.raw_key(cand.task_id, cand.query_id, cand.content_hash), cand.raw)
        if landing:
            with _registered(cat, "landing_bundles", _bundle_rows(landing)):
                cat.run("bundle_insert_batch")
            with _registered(cat, "landing_items", results_table(landing)):
                cat.run("results_insert_batch")
        _record_quarantined(cat, quarantined)
        cat.describe_commit(_what_landed(plan, quarantined), task_ids={c.task_id for c in landing})
        return plan

    plan = catalog.transaction(record, write, action="landing")
    landing = plan.new + [cand for cand, _ in plan.replacing]
    if landing:
        _drop_raced_duplicates(catalog, {(c.task_id, c.query_id) for c in landing})
    return LandingReport(
        landed=[(c.task_id, c.query_id, c.header.item_count) for c in landing],
        replaced=[(c.task_id, c.query_id) for c, _ in plan.replacing],
        unchanged=[(c.task_id, c.query_id) for c in plan.unchanged],
        refused=refused + plan.refused,
    )


def _what_landed(plan: _Plan, quarantined: list) -> str:
    """The history's words for a landing: "landed 3 bundles (30 items), 1 refused"."""
    landing = plan.new + [cand for cand, _ in plan.replacing]
    items = sum(cand.header.item_count for cand in landing)
    parts = [f"landed {counted(len(landing), 'bundle')} ({counted(items, 'item')})",
             f"{len(plan.replacing)} replaced" if plan.replacing else "",
             f"{len(plan.unchanged)} unchanged" if plan.unchanged else "",
             f"{len(quarantined)} refused" if quarantined else ""]
    return ", ".join(part for part in parts if part)


def _drop_raced_duplicates(catalog: Catalog, keys: set[tuple[str, str]]) -> None:
    """Two writers that landed the same task_id and query_id at the same
    moment both committed (tables have no keys to stop them): whoever looks
    after committing sees both, and the bundle that landed first stays. The
    later committer always sees the earlier one, so one of the two cleans up."""
    def drop(cat: Catalog) -> None:
        for (task_id, _query), landed in _landed_bundles(cat, keys).items():
            for later in landed[1:]:
                cat.run("bundle_landing_delete", [later["bundle_uid"], later["snapshot_id"]])
                cat.run("bundle_landing_items_delete", [later["bundle_uid"], later["snapshot_id"]])
                cat.run("cursor_mark_rebuild", [task_id])

    if any(len(found) > 1 for found in _landed_bundles(catalog, keys).values()):
        catalog.transaction(drop, action="landing",
                            detail="removed bundles another writer landed at the same moment")


def _put_quarantined(write: LakeWrite, refusal: Refusal) -> str | None:
    """The refused file's head (the whole of a small file) under quarantine/,
    named by the hash of the whole file."""
    kept = refusal.trimmed()
    if kept.raw is None:
        return None
    suffix = Path(refusal.source).suffix[:10] if "." in Path(refusal.source).name else ".json"
    key = Lake.quarantine_key(kept.file_sha256, suffix or ".json")  # type: ignore[arg-type]
    write.put(key, kept.raw)
    return key


def _record_replaced(cat: Catalog, write: LakeWrite, replacing: list[tuple[ReadyBundle, dict]]) -> None:
    for cand, old in replacing:
        old_uid, old_raw = old["bundle_uid"], old["raw_path"]
        cat.run("bundle_delete", [old_uid])
        cat.run("bundle_items_delete", [old_uid])
        # Consolidation is incremental and may already hold the replaced rows:
        # the task's next consolidation starts over.
        cat.run("cursor_mark_rebuild", [cand.task_id])
        if old_raw and old_raw != Lake.raw_key(cand.task_id, cand.query_id, cand.content_hash):
            write.delete_after_commit(old_raw)


def _record_quarantined(cat: Catalog, quarantined: list[tuple[Refusal, str | None]]) -> None:
    for refusal, stored in quarantined:
        cat.run("quarantine_add", {
            "source_path": refusal.source, "stored_path": stored, "sha256": refusal.file_sha256,
            "size_bytes": refusal.file_size,
            "task_id": refusal.task_id, "query_id": refusal.query_id, "reason": refusal.reason,
            "field": refusal.field, "item_index": refusal.item_index, "message": refusal.message,
            "errors": json.dumps(list(refusal.errors)),
        })


# -- Arrow rows -------------------------------------------------------------

_BUNDLE_ROWS = pa.schema([
    ("bundle_uid", pa.string()), ("task_id", pa.string()), ("query_id", pa.string()),
    ("query_sort_key", pa.string()), ("query_text", pa.string()), ("query_intent", pa.string()),
    ("provider", pa.string()), ("executed_at", pa.timestamp("us", tz="UTC")), ("item_count", pa.int64()),
    ("total_returned", pa.int64()), ("kept_after_filter", pa.int64()), ("failed_count", pa.int64()),
    ("dedup_count", pa.int64()), ("duration_ms", pa.int64()), ("content_hash", pa.string()), ("raw_path", pa.string()),
    ("source_file", pa.string()), ("flow_run_id", pa.string()),
])


def _bundle_rows(cands: list[ReadyBundle]) -> pa.Table:
    """The bundle_catalog rows of the landed bundles (landed_at is the commit's now())."""
    records = []
    flow_run = current_flow_run()
    for cand in cands:
        h = cand.header
        records.append((
            cand.uid, h.task_id, h.query_id, natural_sort_key(h.query_id), h.query_text, h.query_intent,
            h.provider, h.executed_at, h.item_count, h.total_returned, h.kept_after_filter,
            h.failed_count, h.dedup_count, h.duration_ms, cand.content_hash,
            Lake.raw_key(h.task_id, h.query_id, cand.content_hash), cand.source, flow_run,
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


