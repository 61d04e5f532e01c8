"""Landing: validate bundle files and write them into the lake atomically.

A batch of bundles becomes one Parquet file of items per task, one raw JSON
file per bundle, and catalog rows, all committed in one transaction. A file
that cannot land goes to quarantine with a machine-readable reason; the rest
of the batch still lands.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from schemas import rows
from schemas.bundle import SearchResultBundle
from schemas.urls import UnsafeURL
from tasks.catalog import Catalog
from tasks.lake import Lake, LakeWrite

BATCH_ITEMS = 250_000
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


@dataclass
class Candidate:
    source: str
    raw: bytes
    bundle: SearchResultBundle
    content_hash: str

    @property
    def task_id(self) -> str:
        return self.bundle.task_id  # type: ignore[return-value]

    @property
    def query_id(self) -> str:
        return self.bundle.query_id

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
                                  replace=replace, batch_items=batch_items))
    return report


def land_bundles(catalog: Catalog, bundles: Iterable[SearchResultBundle], *, source: str,
                 replace: bool = False) -> LandingReport:
    subs = (Submission(f"{source}:{b.query_id}", b.model_dump_json(exclude_none=True).encode())
            for b in bundles)
    return land_submissions(catalog, subs, task_id=None, replace=replace)


def land_submissions(catalog: Catalog, submissions: Iterable[Submission | Refusal], *,
                     task_id: str | None, replace: bool, batch_items: int = BATCH_ITEMS) -> LandingReport:
    report = LandingReport()
    batch: list[Candidate] = []
    refused: list[Refusal] = []
    size = 0
    for sub in submissions:
        outcome = sub if isinstance(sub, Refusal) else validate(sub, task_id)
        if isinstance(outcome, Refusal):
            refused.append(outcome)
            continue
        batch.append(outcome)
        size += len(outcome.bundle.results)
        if size >= batch_items:
            report.merge(_land_batch(catalog, batch, refused, replace))
            batch, refused, size = [], [], 0
    if batch or refused:
        report.merge(_land_batch(catalog, batch, refused, replace))
    return report


@dataclass
class _Plan:
    new: list[Candidate] = field(default_factory=list)
    replacing: list[tuple[Candidate, tuple]] = field(default_factory=list)
    unchanged: list[Candidate] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def _plan(catalog: Catalog, batch: list[Candidate], replace: bool) -> _Plan:
    plan = _Plan()
    seen: dict[tuple[str, str], str] = {}
    for cand in batch:
        key = (cand.task_id, cand.query_id)
        if key in seen:
            if seen[key] == cand.content_hash:
                plan.unchanged.append(cand)
            else:
                plan.refused.append(_conflict(cand, "another file in this batch has the same task_id and query_id"))
            continue
        seen[key] = cand.content_hash
        existing = catalog.rows("bundle_lookup", list(key))
        if not existing:
            plan.new.append(cand)
        elif existing[0][1] == cand.content_hash:
            plan.unchanged.append(cand)
        elif replace:
            plan.replacing.append((cand, existing[0]))
        else:
            plan.refused.append(_conflict(cand, "a different bundle already landed under this task_id and query_id (use --replace)"))
    return plan


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
        lake.write_parquet(write.staged(key), table)
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
        for cand in landing:
            cat.run("bundle_insert", _bundle_row(cand, results_files[cand.task_id][0], seq))
        for refusal, stored in quarantined:
            cat.run("quarantine_add", [
                refusal.source, stored, _sha(refusal.raw), refusal.task_id, refusal.query_id,
                refusal.reason, refusal.field, refusal.item_index, refusal.message,
                json.dumps(list(refusal.errors)),
            ])

    catalog.commit_write(write, record)
    return LandingReport(
        landed=[(c.task_id, c.query_id, len(c.bundle.results)) for c in landing],
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
        lake.write_parquet(write.staged(new_key), kept)
        rewrites.append((old_file, new_key, task_of[old_file], kept.num_rows))
    return rewrites


def _bundle_row(cand: Candidate, results_file: str, seq: int) -> list:
    b = cand.bundle
    s = b.stats
    return [
        cand.uid, b.task_id, b.query_id, natural_sort_key(b.query_id), b.query_text, b.query_intent,
        b.provider, b.executed_at, len(b.results), s.total_returned, s.kept_after_filter,
        s.failed_count, s.dedup_count, cand.content_hash,
        Lake.raw_key(b.task_id, b.query_id, cand.content_hash), results_file, cand.source, seq,
    ]


_BUNDLE_COLUMNS = ("task_id", "query_id", "query_text", "query_intent", "provider", "executed_at")


def results_table(cands: list[Candidate]) -> pa.Table:
    columns: dict[str, list] = {name: [] for name in rows.RESULTS.names}
    for cand in cands:
        bundle = cand.bundle
        count = len(bundle.results)
        for name in _BUNDLE_COLUMNS:
            columns[name].extend([getattr(bundle, name)] * count)
        columns["query_sort_key"].extend([natural_sort_key(bundle.query_id)] * count)
        columns["bundle_uid"].extend([cand.uid] * count)
        columns["item_index"].extend(range(count))
        items = [item.__dict__ for item in bundle.results]
        for name in rows.ITEM_FIELDS:
            columns[name].extend([item[name] for item in items])
    return pa.Table.from_pydict(columns, schema=rows.RESULTS)
