"""Query results as people and programs read them: each cell as one text
(the terminal), CSV with formula-like cells made inert, and JSON, with JSON
columns as JSON and no value nesting deeper than it can be written out."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal

from schemas.errors import UserError


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]
    # DuckDB's type of each column: what tells a JSON column from text, also
    # inside lists and structs.
    types: list = field(default_factory=list)


class ValueTooDeep(UserError, ValueError):
    """A value nests deeper than it can be written out."""


TOO_DEEP = "a value nests too deeply to write out; select its parts"


def text_rows(result: QueryResult, *, to_the_second: bool = False) -> list[list[str | None]]:
    """Every cell as one text: JSON columns as their JSON text, lists,
    structs and maps as JSON, timestamps in ISO 8601 (to the second, with a
    space for the T, when `to_the_second`: what a person reads), NULL as None."""
    types = _types(result)
    return [[_short_time(value) if to_the_second and isinstance(value, datetime) else _text(value, dtype)
             for value, dtype in zip(row, types)] for row in result.rows]


def _short_time(value: datetime) -> str:
    return value.isoformat(sep=" ", timespec="seconds")


def to_csv(result: QueryResult) -> str:
    """The rows as CSV, text cells a spreadsheet would run as a formula made
    inert (see inert_cell)."""
    types = _types(result)
    rows = ([inert_cell(cell) if isinstance(value, str) and not _is_json(dtype) else cell
             for value, cell, dtype in zip(row, cells, types)]
            for row, cells in zip(result.rows, text_rows(result)))
    return "".join(_csv_lines([[inert_cell(name) for name in result.columns], *rows]))


def _csv_lines(rows) -> Iterator[str]:
    """Each row as a CSV line ending in "\n". The csv module quotes a cell
    holding a character of its line terminator, so rows are written ended
    with "\r\n" and given "\n" instead: a cell holding a carriage return is
    quoted, and read back as one cell (with "\n" alone it was not)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    for row in rows:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(row)
        yield buffer.getvalue()[:-2] + "\n"


# A spreadsheet opening a CSV file runs a cell that starts with one of these
# as a formula (=HYPERLINK(...), +cmd|...): OWASP's CSV injection rule.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def inert_cell(text: str | None) -> str | None:
    """A text cell as a spreadsheet may open it: one starting like a formula
    gets a single quote before it (which spreadsheets show as text). A cell
    that is only a number (-5, +1.5e3) is left as it is, and so is every
    cell of a number column: only text is quoted."""
    if text and text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def to_json(result: QueryResult) -> str:
    """The rows as an array of objects, JSON values embedded as JSON."""
    return _dumps(json_records(result), indent=2)


def json_records(result: QueryResult) -> list[dict]:
    """The rows as objects keyed by column (a repeated name made unique),
    each value as JSON has it (see _plain)."""
    names = _unique(result.columns)
    return [dict(zip(names, row)) for row in json_rows(result)]


def json_rows(result: QueryResult) -> list[list]:
    """The rows as lists of JSON values: JSON columns parsed, lists and
    structs as arrays and objects, timestamps as ISO 8601, NaN as null."""
    types = _types(result)
    return [[_plain(v, t) for v, t in zip(row, types)] for row in result.rows]


def _unique(names: list[str]) -> list[str]:
    """Column names as object keys: a repeated name (select 1 a, 2 a) gets
    _1, _2, ... as DuckDB names it in a subquery, rather than hiding a column."""
    taken: set[str] = set()
    unique = []
    for name in names:
        candidate, n = name, 0
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        taken.add(candidate)
        unique.append(candidate)
    return unique


def _types(result: QueryResult) -> list:
    return list(result.types) or [None] * len(result.columns)


def _text(value, dtype) -> str | None:
    if value is None:
        return None
    if _is_json(dtype) and isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return _dumps(_plain(value, dtype))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (float, Decimal)):
        return str(value)  # exact decimals; nan and inf as DuckDB writes them
    return str(_plain_scalar(value))


def _plain(value, dtype=None):
    """`value` as JSON has it: a JSON column's value parsed (kept as a string
    when it does not parse), lists as arrays, structs and maps as objects,
    timestamps as ISO 8601 strings, NaN and infinities as null (JSON has no
    number for them)."""
    if value is None:
        return None
    if _is_json(dtype) and isinstance(value, str):
        return _parsed_json(value)
    try:
        if isinstance(value, dict):
            return {_key_text(k): _plain(v, _member_type(dtype, k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [_plain(v, _member_type(dtype)) for v in value]
    except RecursionError:
        raise ValueTooDeep(TOO_DEEP) from None
    return _plain_scalar(value)


def _plain_scalar(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return _blob_text(value)
    if isinstance(value, (bool, int, str)):
        return value
    return str(value)  # UUID, INTERVAL (timedelta), ...


def _is_json(dtype) -> bool:
    return dtype is not None and str(dtype) == "JSON"


def _member_type(dtype, key=None):
    """The type of a nested value's members: a list's element, a struct's
    field `key`, a map's value; None when unknown (a union's member)."""
    kind = getattr(dtype, "id", None)
    if kind in ("list", "array"):
        return dtype.children[0][1]
    if kind == "struct":
        return dict(dtype.children).get(key)
    if kind == "map":
        return dtype.children[1][1]
    return None


def _parsed_json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text  # not JSON after all: shown as the text it is
    except RecursionError:
        raise ValueTooDeep(TOO_DEEP) from None


def _key_text(key) -> str:
    """An object key for a map key of any type."""
    plain = _plain(key)
    return plain if isinstance(plain, str) else _dumps(plain)


def _blob_text(value: bytes) -> str:
    """A BLOB as DuckDB writes one: printable ASCII as is, other bytes as \\xNN."""
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in value)


def _dumps(value, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    except RecursionError:
        raise ValueTooDeep(TOO_DEEP) from None
