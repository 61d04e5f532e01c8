"""Plain-text tools of the extractive synthesizer: paragraphs, table rows
and sentence spans (Latin and CJK punctuation, offsets into the text),
near-duplicate detection and locating quotes (figures with units are in
tasks/synthesis/figures.py). Words and terms come from the one text module,
tasks/common/text.py. No model, no I/O."""

from __future__ import annotations

import re
import unicodedata

from tasks.common.text import CJK_RUN, has_han

_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "dr.", "prof.", "fig.", "no.", "approx.", "inc.", "u.s.")


def fold(text: str) -> str:
    """The comparable form of a text: NFKC (full-width → ASCII), case-folded,
    typographic quotes and dashes made plain, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    text = text.translate(_PLAIN_PUNCT)
    return " ".join(text.split())


_PLAIN_PUNCT = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                              "\u2013": "-", "\u2014": "-", "\u00a0": " "})


# -- sentences -----------------------------------------------------------------

# A Latin sentence ends at . ! ? (and any closing quote or bracket) before
# whitespace, so "3.5" and "pyproject.toml" stay whole; a CJK one needs none.
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(?=\s)|[\u3002\uff01\uff1f\uff1b][\u201d\u2019\u300d\u300f\uff09]*")
_LINE = re.compile(r"[^\n]+")
_LINE_END = tuple(".!?;:\u3002\uff01\uff1f\uff1b\uff1a")
_CLAUSE_END = tuple(",\uff0c\u3001")  # a line ending mid-clause goes on on the next
_TABLE_LINE = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.MULTILINE)
_GRID_BORDER = re.compile(r"^[ \t]*\+[-=+:]+\+[ \t]*$")
_ENUMERATOR = re.compile(r"^\(?(?:\d{1,3}|[a-z]|[ivx]{1,4})[.)]$", re.I)


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """[start, end) of each sentence of a text (of one block of it, when
    `start` and `end` are given): offsets into the text itself, so
    text[start:end] is the sentence verbatim (hard wraps and all)."""
    spans: list[tuple[int, int]] = []
    blocks = block_spans(text or "") if end is None else [(start, end)]
    for start, end in blocks:
        pos = start
        for match in _SENTENCE_END.finditer(text, start, end):
            piece = text[pos:match.end()].strip()
            if _ENUMERATOR.match(piece) or piece.casefold().endswith(_ABBREVIATIONS):
                if _ENUMERATOR.match(piece):
                    pos = match.end()  # "1." opens a list item; it is not a sentence
                continue
            spans.append(trimmed(text, pos, match.end()))
            pos = match.end()
        if text[pos:end].strip():
            spans.append(trimmed(text, pos, end))
    return spans


def trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def table_rows(text: str) -> set[int]:
    """Where each row of a Markdown table starts (the library stores HTML
    tables so too): a line "| … |" of a run of such lines. A run under or
    over a "+---+" border is a grid table (reStructuredText), whose cells
    span lines: its lines are no rows."""
    rows: set[int] = set()
    run: list[int] = []
    bordered = False
    at = 0
    for line in text.split("\n"):
        start, at = at, at + len(line) + 1
        if _TABLE_LINE.match(line):
            run.append(start)
            continue
        if line.strip() or run:
            grid = bordered or bool(_GRID_BORDER.match(line))
            if run and not grid:
                rows.update(run)
            run = []
            bordered = bool(_GRID_BORDER.match(line))
    if run and not bordered:
        rows.update(run)
    return rows


def block_spans(text: str) -> list[tuple[int, int]]:
    """Paragraphs, with hard-wrapped lines kept together: a line continues on
    the next when it does not end a sentence and either is long (a wrap; a
    CJK character counts twice), ends mid-clause (a comma), runs Chinese on
    into Chinese past a heading's length, or the next starts in lower case;
    short unpunctuated lines (headings, list items) stay on their own, a
    table row is a block of its own, and a blank line always ends a
    paragraph."""
    blocks: list[tuple[int, int]] = []
    start = end = -1
    last_line = ""
    rows = table_rows(text)
    last_row = False
    for match in _LINE.finditer(text):
        line = match.group().strip()
        if not line:
            continue
        line_start, line_end = trimmed(text, match.start(), match.end())
        blank_before = start >= 0 and text.count("\n", end, line_start) >= 2
        row = match.start() in rows
        joins = (start >= 0 and not blank_before and not last_line.endswith(_LINE_END) and not (row or last_row)
                 and (weight_len(last_line) >= 50 or line[:1].islower() or last_line.endswith(_CLAUSE_END)
                      or (weight_len(last_line) >= 24 and has_han(last_line[-1:]) and has_han(line[:1]))))
        if joins:
            end = line_end
        else:
            if start >= 0:
                blocks.append((start, end))
            start, end = line_start, line_end
        last_line, last_row = line, row
    if start >= 0:
        blocks.append((start, end))
    return blocks


def weight_len(text: str) -> int:
    """Length where a CJK character counts twice: a CJK character carries
    about as much as two Latin letters, so one threshold serves both."""
    return len(text) + sum(len(run) for run in CJK_RUN.findall(text))


def clip(text: str, limit: int) -> str:
    """A prefix of at most `limit` characters, cut at a space when there is
    one: still a verbatim substring, so it stays quotable."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[:cut if cut > limit // 2 else limit].rstrip(" ,;:")


# -- quote checking ------------------------------------------------------------

_ELISION = re.compile(r"\s*(?:\.\.\.|\u2026)+\s*")
_QUOTE_MARKS = "\"'\u2018\u2019\u201c\u201d\u300c\u300d\u300e\u300f"


def _spaced(ch: str) -> bool:
    """Whether a space next to this character is part of the text's sense:
    between Latin words, yes; beside CJK or punctuation, copying adds and
    drops such spaces freely."""
    return ch.isalnum() and not CJK_RUN.match(ch)


def comparable(text: str) -> tuple[str, list[int], list[int]]:
    """The form quotes are compared in — each character (with its combining
    marks) NFKC-normalized, so full-width forms read as half-width, then
    case-folded, typographic quotes and dashes made plain, whitespace kept
    only as one space between Latin words — and, per character of it, the
    [start, end) offsets in `text` of what it came from."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    space_at = -1
    for start, end in _clusters(text or ""):
        piece = unicodedata.normalize("NFKC", text[start:end]).casefold().translate(_PLAIN_PUNCT)
        if not piece.strip():
            space_at = start if space_at < 0 else space_at
            continue
        if space_at >= 0 and out and _spaced(out[-1]) and _spaced(piece[0]):
            out.append(" ")
            starts.append(space_at)
            ends.append(start)
        space_at = -1
        for folded in piece:
            out.append(folded)
            starts.append(start)
            ends.append(end)
    return "".join(out), starts, ends


def _clusters(text: str):
    """[start, end) of each character with the combining marks that follow it."""
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or not unicodedata.combining(text[i]):
            yield start, i
            start = i


def locate(quote: str, text: str) -> tuple[int, int] | None:
    """Where a quote occurs in a text, as [start, end) offsets into the text,
    compared in `comparable` form on both sides (case, whitespace, full- and
    half-width forms, typographic quotes); None when it does not occur. An
    elided quote ("a … b") must have its parts in order, and spans from the
    first part to the last; quotation marks around it are not part of it."""
    parts = [comparable(p.strip(_QUOTE_MARKS + " \u3000"))[0] for p in _ELISION.split(quote or "")]
    parts = [p for p in parts if p]
    if not parts:
        return None
    haystack, starts, ends = comparable(text)
    first, pos = None, 0
    for part in parts:
        found = haystack.find(part, pos)
        if found < 0:
            return None
        first = found if first is None else first
        pos = found + len(part)
    return starts[first], ends[pos - 1]


# -- ranking -------------------------------------------------------------------

def jaccard(a: set, b: set) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def near_duplicate(a: set, b: set, threshold: float = 0.8) -> bool:
    """Same passage, give or take a few words: high overlap, or one almost
    wholly inside the other (a snippet and the sentence it was cut from)."""
    if not a or not b:
        return False
    small = min(len(a), len(b))
    return jaccard(a, b) >= threshold or (small >= 4 and len(a & b) / small >= 0.9)
