"""Validation: read bundle files and check them against the contract.

Each submission becomes a ReadyBundle (a valid bundle, ready to land) or a
Refusal with a machine-readable reason (tasks.lake.refusals);
tasks.lake.landing writes them into the lake.

Speed without a change of verdict: a bundle is first checked by a stricter
twin of the contract that runs inside pydantic-core (schemas.bundle
FAST_BUNDLE) and converted to Arrow columns as a whole; anything the twin
does not accept goes through SearchResultBundle as before. Large sets of files
are checked in forked worker processes (tasks.lake.validation_pool).

Whatever a file holds, the outcome is a ReadyBundle or a Refusal: duplicate
keys and nesting too deep to parse are refused before validation, anything a
validation raises becomes a refusal.
"""

from __future__ import annotations

import os
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import jiter
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import TypeAdapter, ValidationError

from schemas import rows
from schemas.bundle import FAST_BUNDLE, SearchResultBundle
from schemas.timestamps import to_utc
from schemas.urls import file_url_path, source_id_for
from tasks.common.untrusted_files import FileRefused, FileTooLarge, is_utf8_name, printable_path, read_file_inside
from tasks.lake.refusals import KEPT_HEAD_BYTES, Refusal, failure_refusal, refusal_from_errors, shape_refusal

@dataclass(frozen=True)
class Submission:
    source: str
    raw: bytes


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

@dataclass(frozen=True)
class InputFile:
    """A file to ingest: its path as given (what refusals show) and the only
    folder it may be read from (a link is followed only to a file inside it)."""

    path: Path
    folder: Path


def expand_paths(paths: Iterable[str | Path], *,
                 within: str | Path | None = None) -> tuple[list[InputFile], list[Refusal]]:
    """The bundle files of the given paths. A folder's files are read from
    inside that folder; a file named alone from inside its own folder, or
    from `within` when it lies below that folder."""
    files: list[InputFile] = []
    missing: list[Refusal] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files += [InputFile(found, path) for found in json_files_below(path)]
        elif os.path.lexists(path):  # a FIFO or a link too: reading it says what is wrong with it
            inside = within is not None and path.is_relative_to(within)
            files.append(InputFile(path, Path(within) if inside else path.parent))  # type: ignore[arg-type]
        else:
            missing.append(Refusal(printable_path(str(path)), "not_found", "no such file or folder"))
    return files, missing


def json_files_below(folder: Path, skip: Iterable[Path] = ()) -> list[Path]:
    """The *.json entries below a folder, of any file type, in name order;
    linked folders and the `skip` folders are not walked."""
    skipped = set(skip)
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):  # does not follow links to folders
        dirnames[:] = [name for name in dirnames if Path(dirpath, name) not in skipped]
        found += [Path(dirpath, name) for name in filenames if name.endswith(".json")]
    return sorted(found)


def read_submissions(files: Iterable[InputFile], max_bytes: int | None = None) -> Iterator[Submission | Refusal]:
    """Each file's bytes, or its refusal. A file larger than `max_bytes` is
    refused by its size before it is read; quarantine keeps its head."""
    for file in files:
        source = str(file.path)
        if not is_utf8_name(source):  # a name no log line, JSON document or catalog column can hold
            yield Refusal(printable_path(source), "bad_file_name", "file name is not valid UTF-8")
            continue
        try:
            yield Submission(source, read_file_inside(file.folder, file.path.relative_to(file.folder),
                                                      max_bytes=max_bytes, keep_head=KEPT_HEAD_BYTES))
        except FileTooLarge as refused:
            yield _too_large(source, refused)
        except FileRefused as refused:  # never read, so never copied into quarantine either
            yield Refusal(source, "unsafe_file", str(refused))
        except OSError as exc:
            yield Refusal(source, "unreadable", exc.strerror or str(exc))


def _too_large(source: str, refused: FileTooLarge) -> Refusal:
    message = (f"the file holds {refused.size:,} bytes, more than the limit of {refused.limit:,} "
               "(SEARCHLAKE_MAX_BUNDLE_BYTES)")
    head = refused.head
    return Refusal(source, "too_large", message, raw=head.head if head else None,
                   size=head.size if head else refused.size, sha256=head.sha256 if head else None,
                   errors=({"field": "", "type": "too_large", "message": message},))


# -- validating -------------------------------------------------------------

def validate(sub: Submission, default_task_id: str | None) -> ReadyBundle | Refusal:
    try:
        bundle = SearchResultBundle.model_validate_json(sub.raw)
    except ValidationError as exc:
        return refusal_from_errors(sub, exc)
    if bundle.task_id is None:
        if default_task_id is None:
            return Refusal(sub.source, "missing_task", "the bundle names no task_id and no --task-id was given",
                           field="task_id", query_id=bundle.query_id, raw=sub.raw)
        bundle.task_id = default_task_id
    return ReadyBundle(sub.source, sub.raw, bundle, hashlib.sha256(sub.raw).hexdigest())


FileRoots = tuple[str, ...] | None  # library folders file: URLs must lie in; None: not checked


def prepare(sub: Submission, default_task_id: str | None, file_roots: FileRoots = None) -> ReadyBundle | Refusal:
    """validate(), by the fast path when the bundle allows it (same verdict,
    same values): its items then come back as Arrow columns. With
    `file_roots`, a file: URL outside those folders refuses the bundle.
    Never raises: whatever goes wrong with a file is its refusal."""
    try:
        refused = _unparsable_shape(sub)
        if refused is not None:
            return refused
        fast = _fast_candidate(sub, default_task_id)
        outcome = fast if fast is not None else _with_item_columns(validate(sub, default_task_id))
        if file_roots is not None and isinstance(outcome, ReadyBundle):
            return _file_url_outside(outcome, file_roots) or outcome
        return outcome
    except Exception as exc:  # noqa: BLE001 - a file of any shape is refused, never fatal
        return failure_refusal(sub, exc)


def _with_item_columns(outcome: ReadyBundle | Refusal) -> ReadyBundle | Refusal:
    """A valid bundle whose items Arrow cannot store (text that is not
    Unicode, such as a lone surrogate) is refused here, not at landing."""
    if isinstance(outcome, Refusal) or outcome.items is not None:
        return outcome
    try:
        outcome.items = item_columns(outcome.bundle)  # type: ignore[arg-type]
    except (pa.ArrowException, UnicodeError, ValueError, TypeError) as exc:
        message = f"cannot be stored: {type(exc).__name__}: {exc}"[:500]
        return Refusal(outcome.source, "invalid_value", message, field="results", task_id=outcome.task_id,
                       query_id=outcome.query_id, raw=outcome.raw,
                       errors=({"field": "results", "type": "invalid_value", "message": message},))
    return outcome


def same_document(raw: bytes, other: bytes) -> bool:
    """Two JSON texts of one document: equal once parsed (key order,
    whitespace and escapes do not matter)."""
    try:
        return jiter.from_json(raw) == jiter.from_json(other)
    except ValueError:
        return False


def _unparsable_shape(sub: Submission) -> Refusal | None:
    """Duplicate keys (a raw file whose readers disagree on its values) and
    nesting deeper than the JSON parsers go, refused before validation."""
    try:
        jiter.from_json(sub.raw, catch_duplicate_keys=True, cache_mode="keys")
    except ValueError as exc:
        message = str(exc)
        if message.startswith("Detected duplicate key"):
            key = message.split('"')[1] if message.count('"') >= 2 else None
            return shape_refusal(sub, "duplicate_key", f"{message}; a key may appear once per object", key)
        if "recursion limit" in message:
            return shape_refusal(sub, "too_deep", f"JSON nested too deep ({message})", None)
    return None  # valid JSON, or invalid in a way validation reports


def _file_url_outside(ready: ReadyBundle, roots: tuple[str, ...]) -> Refusal | None:
    """An ingested bundle may point at local files only inside a library folder."""
    urls = ready.items.column("url")  # type: ignore[union-attr]  # prepare() gives every bundle its columns
    file_urls = pc.match_substring_regex(urls, r"^\s*[Ff][Ii][Ll][Ee]:")
    for index in pc.indices_nonzero(pc.fill_null(file_urls, False)).to_pylist():
        url = urls[index].as_py()
        if not _inside_any(file_url_path(url), roots):
            where = "the library folder " + ", ".join(roots) if roots else "a configured library (SEARCHLAKE_LIBRARY)"
            message = f"file: URL outside {where}"
            field = f"results[{index}].url"
            return Refusal(ready.source, "unsafe_url", message, field=field, item_index=index,
                           task_id=ready.task_id, query_id=ready.query_id, raw=ready.raw,
                           errors=({"field": field, "type": "unsafe_url", "message": message},))
    return None


def _inside_any(path: str | None, roots: tuple[str, ...]) -> bool:
    if path is None:
        return False
    resolved = os.path.realpath(path)
    try:
        return any(os.path.commonpath([resolved, root]) == root for root in roots)
    except ValueError:  # e.g. "//x" beside "/x": not inside
        return False


def library_roots(folders: Iterable[str | Path | None]) -> tuple[str, ...]:
    """The resolved library folders that ingested file: URLs may point into."""
    return tuple(os.path.realpath(Path(folder).expanduser()) for folder in folders if folder)


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
