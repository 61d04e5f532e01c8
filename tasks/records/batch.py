"""Reading a batch's question file, and the batch's record in the lake.

A question file is CSV with a `question` column (and optional `library`,
`providers`, `target`), JSON Lines with the same keys, or plain text with one
question per line: told apart by the extension (.csv, .jsonl, .txt) or else
by the content. A file that cannot be used at all (not UTF-8, an unknown
column or key, no question column) raises QuestionFileError naming the line;
a row that can be skipped (empty, a bad value, a control character in the
question, a question asked twice) is one note, and the other rows still run.
Lines end at a line feed or carriage return only: a control character
inside a line is that line's problem, not the start of another line."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from schemas.batch import (COLUMNS, QuestionFile, QuestionFileError, QuestionRow, provider_list,
                           target_number)
from tasks.common.settings import Settings
from tasks.lake.catalog import Catalog, open_catalog

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".txt": "txt"}
# Control characters but tab, line feed and carriage return (which a CSV
# cell may hold for a question written on several lines): NUL, escapes,
# DEL and C1 have no place in a question and would reach the reports.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LINE_END = re.compile("\r\n|\r|\n")


def read_questions(path: Path) -> QuestionFile:
    """The questions of a file, in file order, each once."""
    text = _utf8_text(path).rstrip() + "\n"  # blank lines at the end are no rows
    if not text.strip():
        raise QuestionFileError(f"{path.name} holds no question")
    kind = FORMATS.get(path.suffix.lower()) or _sniffed(text)
    rows, notes = {"csv": _csv_rows, "jsonl": _jsonl_rows, "txt": _text_rows}[kind](path.name, text)
    return _once_each(path.name, rows, notes)


def _once_each(name: str, rows: list[QuestionRow], notes: list[str]) -> QuestionFile:
    kept: dict[tuple, QuestionRow] = {}
    for row in rows:
        first = kept.setdefault(row.duplicate_key(), row)
        if first is not row:
            notes.append(f"{name} row {row.row}: the same question as row {first.row}; it runs once")
    return QuestionFile(list(kept.values()), notes)


def rows_of_records(records: list, name: str = "questions") -> QuestionFile:
    """Questions given as values rather than a file (a deployment's
    parameter): each a question's text, or an object with the file's keys."""
    if not isinstance(records, list):
        raise QuestionFileError(f"{name} must be a list of questions or a question file's path")
    rows, notes = [], []
    for number, record in enumerate(records, start=1):
        values = record if isinstance(record, dict) else {"question": record}
        _check_columns(name, list(values), "key", number)
        _add_row(name, number, values, rows, notes)
    return _once_each(name, rows, notes)


def _utf8_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise QuestionFileError(f"cannot read the question file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise QuestionFileError(f"{path.name} row {line} is not UTF-8 text: save the file as UTF-8") from None


def _sniffed(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("{"):
        return "jsonl"
    if first.split(",")[0].strip().strip('"').lower() == "question":
        return "csv"
    return "txt"


def _lines(text: str) -> list[str]:
    """The file's lines (its text ends with one line end); str.splitlines()
    would also end a line at a form feed, U+001C-U+001E, U+0085 or U+2028."""
    return _LINE_END.split(text.removesuffix("\n"))


def _text_rows(name: str, text: str) -> tuple[list[QuestionRow], list[str]]:
    rows, notes = [], []
    for number, line in enumerate(_lines(text), start=1):
        _add_row(name, number, {"question": line}, rows, notes)
    return rows, notes


def _csv_rows(name: str, text: str) -> tuple[list[QuestionRow], list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [column.strip().lower() for column in next(reader)]
    except csv.Error as exc:
        raise QuestionFileError(f"{name} row 1: {exc}") from None
    _check_columns(name, header, "column", 1)
    rows, notes = [], []
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise QuestionFileError(f"{name} row {start}: {exc}") from None
        values = dict(zip(header, (cell.strip() for cell in cells)))
        if len(cells) > len(header) and any(cell.strip() for cell in cells[len(header):]):
            notes.append(f"{name} row {start}: more cells than columns, skipped")
            continue
        _add_row(name, start, values, rows, notes)
    return rows, notes


def _jsonl_rows(name: str, text: str) -> tuple[list[QuestionRow], list[str]]:
    rows, notes = [], []
    for number, line in enumerate(_lines(text), start=1):
        if not line.strip():
            notes.append(f"{name} row {number}: empty, skipped")
            continue
        try:
            values = json.loads(line)
        except ValueError:
            notes.append(f"{name} row {number}: not a JSON object, skipped")
            continue
        if not isinstance(values, dict):
            notes.append(f"{name} row {number}: not a JSON object, skipped")
            continue
        _check_columns(name, list(values), "key", number)
        _add_row(name, number, values, rows, notes)
    return rows, notes


def _check_columns(name: str, columns: list[str], kind: str, row: int) -> None:
    unknown = [column for column in columns if column not in COLUMNS]
    if unknown:
        raise QuestionFileError(f"{name} row {row}: unknown {kind} {unknown[0]!r} (known: {', '.join(COLUMNS)})")
    if kind == "column" and "question" not in columns:
        raise QuestionFileError(f"{name} row 1: no 'question' column (the columns are {', '.join(COLUMNS)})")


def _add_row(name: str, number: int, values: dict, rows: list[QuestionRow], notes: list[str]) -> None:
    question = values.get("question")
    if question is None or (isinstance(question, str) and not question.strip()):
        notes.append(f"{name} row {number}: empty, skipped")
        return
    try:
        if not isinstance(question, str):
            raise ValueError(f"question must be text, not {question!r}")
        if control := _CONTROL.search(question):
            raise ValueError(f"the question holds a control character (U+{ord(control.group()):04X})")
        library = values.get("library") or None
        if library is not None and not isinstance(library, str):
            raise ValueError(f"library must be a folder name, not {library!r}")
        rows.append(QuestionRow(number, question.strip(), library, provider_list(values.get("providers")),
                                target_number(values.get("target"))))
    except ValueError as exc:
        notes.append(f"{name} row {number}: {exc}, skipped")


# -- the batch in the lake ----------------------------------------------------------

def record_batch(settings: Settings, batch_id: str, members: list[tuple[QuestionRow, str]]) -> None:
    """The batch's questions and their task ids, as `batch_questions` rows:
    added when new, rows the file no longer holds dropped, in one commit."""
    def record(catalog: Catalog) -> None:
        catalog.run("batch_questions_drop_others", [batch_id, [task_id for _, task_id in members]])
        for row, task_id in members:
            catalog.run("batch_question_insert", [batch_id, row.row, row.question, task_id,
                                                  json.dumps(row.params()), batch_id, task_id])

    with open_catalog(settings, "batch: record") as catalog:
        catalog.transaction(record, action="batch", detail=f"{batch_id}: {len(members)} questions")


def answered_tasks(settings: Settings, task_ids: list[str]) -> set[str]:
    """Which of these tasks have a published report."""
    with open_catalog(settings, "batch: answered", read_only=True) as catalog:
        return {row[0] for row in catalog.rows("answered_tasks", [task_ids])}

