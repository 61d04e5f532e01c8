"""A batch: a list of questions researched as one job, each question as its
own research task. The question file's rows, the batch's identity and each
question's task id (both stable: running the same batch again finds the same
tasks) are defined here; reading the file is tasks/records/batch.py."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from schemas.bundle import check_identifier
from schemas.errors import UserError

COLUMNS = ("question", "library", "providers", "target")
MAX_BATCH_NAME = 64  # leaves room in a task id (128) for the row and the question's hash


class QuestionFileError(UserError, ValueError):
    """The question file cannot be used at all (one line naming the row or the column)."""


@dataclass(frozen=True)
class QuestionRow:
    """One question of the file, with the options its row asks for (None: the batch's own)."""

    row: int  # the line of the file the question starts on
    question: str
    library: str | None = None
    providers: tuple[str, ...] | None = None
    target: int | None = None

    def params(self) -> dict:
        return {"library": self.library, "providers": list(self.providers) if self.providers else None,
                "target": self.target}

    def duplicate_key(self) -> tuple:
        """The same question (spacing and case aside) asked with the same options."""
        return (" ".join(self.question.split()).casefold(), self.library, self.providers, self.target)


@dataclass
class QuestionFile:
    rows: list[QuestionRow]
    notes: list[str] = field(default_factory=list)  # one line per row skipped or merged


def check_batch_name(name: str) -> str:
    if len(name) > MAX_BATCH_NAME:
        raise ValueError(f"--batch must have at most {MAX_BATCH_NAME} characters")
    try:
        return check_identifier(name)
    except ValueError as exc:
        raise ValueError(f"--batch: {exc}") from None


def batch_id_of(rows: list[QuestionRow]) -> str:
    """A batch named by what it asks: the rows' questions and options, however
    the file was spelled (format, spacing, blank lines aside)."""
    normalized = json.dumps([[r.row, " ".join(r.question.split()), r.params()] for r in rows], sort_keys=True,
                            ensure_ascii=False)
    return "batch-" + hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:12]


def question_task_id(batch_id: str, row: QuestionRow) -> str:
    """The research task answering a row: the batch, the row, the question."""
    digest = hashlib.sha256(" ".join(row.question.split()).encode("utf-8")).hexdigest()[:8]
    return f"{batch_id}-r{row.row}-{digest}"


_SPLIT = re.compile(r"[,;]")


def provider_list(value: object) -> tuple[str, ...] | None:
    """A row's providers: "library,arxiv" (CSV) or ["library", "arxiv"] (JSON Lines)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        names = [part.strip() for part in _SPLIT.split(value)]
    elif isinstance(value, list) and all(isinstance(part, str) for part in value):
        names = [part.strip() for part in value]
    else:
        raise ValueError(f"providers must be a comma list of names, not {value!r}")
    return tuple(name for name in names if name) or None


def target_number(value: object) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())):
        raise ValueError(f"target must be a whole number of sources, not {value!r}")
    number = int(value)
    if number < 1:
        raise ValueError(f"target must be at least 1, not {number}")
    return number
