"""Refusals: why a submitted bundle does not land, as a machine-readable
reason (missing_field, not_json, unsafe_url, duplicate_key, …), the field
and item it concerns, and every error found, taken from pydantic's
validation errors or from the failure that stopped a check.

Quarantine keeps the first KEPT_HEAD_BYTES of a refused file, with the
size and SHA-256 of the whole file: enough to see what was sent and to
match it with the sender's copy, never a copy as large as what was sent."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import jiter
from pydantic import ValidationError

from schemas.urls import UnsafeURL

if TYPE_CHECKING:
    from tasks.lake.validation import Submission

KEPT_HEAD_BYTES = 64 << 10


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
    raw: bytes | None = None  # what was read of the file (None: it was not read)
    size: int | None = None  # of the whole file, when `raw` holds only its head
    sha256: str | None = None  # of the whole file, when `raw` holds only its head

    @property
    def file_size(self) -> int | None:
        return self.size if self.size is not None else (len(self.raw) if self.raw is not None else None)

    @property
    def file_sha256(self) -> str | None:
        if self.sha256 is not None:
            return self.sha256
        return hashlib.sha256(self.raw).hexdigest() if self.raw is not None else None

    def trimmed(self) -> "Refusal":
        """The refusal keeping only what quarantine keeps of the file: its
        head, with the size and hash of all of it."""
        if self.raw is None or len(self.raw) <= KEPT_HEAD_BYTES:
            return self
        return replace(self, raw=self.raw[:KEPT_HEAD_BYTES], size=self.file_size, sha256=self.file_sha256)

    def line(self) -> str:
        where = f" {self.field}" if self.field else ""
        return f"refused {self.source}: {self.reason}{where}: {self.message}"


def shape_refusal(sub: Submission, reason: str, message: str, field: str | None) -> Refusal:
    task_id, query_id = ids_if_readable(sub.raw)
    return Refusal(sub.source, reason, message, field=field, task_id=task_id, query_id=query_id, raw=sub.raw,
                   errors=({"field": field or "", "type": reason, "message": message},))


def failure_refusal(sub: Submission, exc: BaseException) -> Refusal:
    message = f"validation failed: {type(exc).__name__}: {exc}"[:500]
    return Refusal(sub.source, "validation_error", message, raw=sub.raw,
                   errors=({"field": "", "type": "validation_error", "message": message},))


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
    if kind in ("string_too_long", "too_long"):
        return "too_long"
    if isinstance(error.get("ctx", {}).get("error"), UnsafeURL):
        return "unsafe_url"
    return "invalid_value"


def refusal_from_errors(sub: Submission, exc: ValidationError) -> Refusal:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    loc = first["loc"]
    item_index = loc[1] if len(loc) > 1 and loc[0] == "results" and isinstance(loc[1], int) else None
    task_id, query_id = ids_if_readable(sub.raw)
    return Refusal(
        sub.source, _reason(first), first["msg"], field=_format_loc(loc) or None, item_index=item_index,
        task_id=task_id, query_id=query_id, raw=sub.raw,
        errors=tuple({"field": _format_loc(e["loc"]), "type": _reason(e), "message": e["msg"]} for e in errors),
    )


def ids_if_readable(raw: bytes) -> tuple[str | None, str | None]:
    try:
        doc = jiter.from_json(raw)
    except ValueError:  # jiter has a nesting limit: never a RecursionError
        return None, None
    if not isinstance(doc, dict):
        return None, None
    ids = (doc.get("task_id"), doc.get("query_id"))
    return tuple(v if isinstance(v, str) else None for v in ids)  # type: ignore[return-value]
