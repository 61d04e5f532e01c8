"""Plain-text tools of the extractive synthesizer: sentence spans (Latin
and CJK punctuation, offsets into the text), near-duplicate detection,
locating quotes, and figures-with-units extraction. Words and
terms come from the one text module, tasks/common/text.py. No model, no I/O."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from tasks.common.text import CJK_RUN

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "dr.", "prof.", "fig.", "no.", "approx.", "inc.", "u.s.")


def has_cjk(text: str) -> bool:
    """True when the text contains Chinese characters (decides the output language)."""
    return bool(_HAN.search(text or ""))


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
            spans.append(_trimmed(text, pos, match.end()))
            pos = match.end()
        if text[pos:end].strip():
            spans.append(_trimmed(text, pos, end))
    return spans


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
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
        line_start, line_end = _trimmed(text, match.start(), match.end())
        blank_before = start >= 0 and text.count("\n", end, line_start) >= 2
        row = match.start() in rows
        joins = (start >= 0 and not blank_before and not last_line.endswith(_LINE_END) and not (row or last_row)
                 and (weight_len(last_line) >= 50 or line[:1].islower() or last_line.endswith(_CLAUSE_END)
                      or (weight_len(last_line) >= 24 and has_cjk(last_line[-1:]) and has_cjk(line[:1]))))
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


# -- figures with units --------------------------------------------------------

_NUM = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9,
           "b": 1e9, "trillion": 1e12, "tn": 1e12, "万": 1e4, "亿": 1e8, "万亿": 1e12}
_CURRENCIES = {"$": "USD", "us$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "美元": "USD",
               "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR", "欧元": "EUR", "£": "GBP",
               "gbp": "GBP", "¥": "CNY", "￥": "CNY", "cny": "CNY", "rmb": "CNY", "yuan": "CNY",
               "元": "CNY", "人民币": "CNY", "日元": "JPY"}
_DURATIONS = {"year": "years", "years": "years", "yr": "years", "yrs": "years", "年": "years",
              "month": "months", "months": "months", "个月": "months", "week": "weeks", "weeks": "weeks",
              "周": "weeks", "day": "days", "days": "days", "天": "days", "hour": "hours", "hours": "hours",
              "小时": "hours", "minute": "minutes", "minutes": "minutes", "分钟": "minutes",
              "second": "seconds", "seconds": "seconds", "秒": "seconds", "ms": "ms",
              "millisecond": "ms", "milliseconds": "ms", "毫秒": "ms"}
_MEASURES = ("GB", "MB", "KB", "TB", "PB", "GHz", "MHz", "kWh", "MWh", "TWh", "MW", "GW", "km", "kg",
             "°C", "℃", "nm")
_COUNTS = ("users", "customers", "people", "employees", "downloads", "packages", "projects",
           "countries", "companies", "人", "家", "名", "次", "个国家")
_COUNT_WORDS = "|".join(c for c in _COUNTS if c.isascii())
_COUNT_ZH = "人|家|名|次|户|台|辆|件|个"
_LATIN_SCALE = r"(?:trillion|billion|million|thousand|bn|mn|tn|[kmb](?![a-z]))"
_CJK_SCALE = r"(?:万亿|亿|万)"
_CUR_WORD = r"(?:usd|eur|gbp|cny|rmb|dollars?|euros?|yuan)(?![a-z])"
_CUR_ZH = r"(?:美元|欧元|日元|人民币|元)"

_FIGURE_PATTERNS = [
    ("money", re.compile(rf"(?P<cur>us\$|\$|€|£|¥|￥)\s?{_NUM}(?:\s?(?P<scale>{_LATIN_SCALE}|{_CJK_SCALE}))?", re.I)),
    ("percent", re.compile(rf"{_NUM}\s?(?P<unit>%(?!\d)|％|percent(?![a-z])|per cent(?![a-z])|percentage points?|个百分点)", re.I)),
    ("scaled", re.compile(rf"{_NUM}\s?(?P<scale>trillion|billion|million|thousand|bn|mn)(?![a-z])"
                          rf"(?:\s(?P<cur>{_CUR_WORD})|\s(?P<noun>{_COUNT_WORDS})(?![a-z]))?", re.I)),
    ("scaled_zh", re.compile(rf"{_NUM}\s?(?P<scale>{_CJK_SCALE})(?:(?P<cur>{_CUR_ZH})|(?P<noun>{_COUNT_ZH}))?")),
    ("currency_word", re.compile(rf"{_NUM}\s?(?P<cur>{_CUR_WORD}|{_CUR_ZH})", re.I)),
    ("multiple", re.compile(rf"{_NUM}\s?(?P<unit>x|×|-fold|fold|倍)(?![a-z])", re.I)),
    ("duration", re.compile(rf"{_NUM}[\s-]?(?P<unit>years?|yrs?|months?|weeks?|days?|hours?|minutes?|seconds?|milliseconds?|ms|个月|年|周|天|小时|分钟|毫秒|秒)(?![a-z])", re.I)),
    ("measure", re.compile(rf"{_NUM}\s?(?P<unit>{'|'.join(map(re.escape, _MEASURES))})(?![a-z])")),
    ("count", re.compile(rf"{_NUM}\s?(?P<unit>{'|'.join(map(re.escape, _COUNTS))})(?![a-z])", re.I)),
]


@dataclass(frozen=True)
class Figure:
    """A number with its unit as written, and its comparable form."""

    value: float
    unit: str            # as shown: "%", "billion USD", "亿元", "x", "years"
    base_unit: str       # comparable unit: "%", "USD", "x", "years", "count:users"
    base_value: float    # value × scale, in base_unit
    start: int
    end: int
    measure: str         # the words the figure measures


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _not_a_quantity(kind: str, match: re.Match, sentence: str) -> bool:
    """A date, a name or an expression, not a measure: "2020年" is a year,
    not 2020 years; "Python3" and "H100" are names; in "-1e-100 % 1e100"
    the 100 is an exponent and % an operator."""
    num = match.group("num")
    if kind == "duration" and re.fullmatch(r"1[5-9]\d\d|20\d\d|21\d\d", num):
        return True
    before = sentence[max(0, match.start() - 2):match.start()]
    if before[-1:].isalpha() and not CJK_RUN.match(before[-1:]):
        return True  # glued to letters: a name
    if before[-1:] in ("-", "+") and before[:1].isalnum() or before[-1:] in tuple("*/^=<>.%"):
        return True  # an exponent or an operand
    after = sentence[match.end():].lstrip()
    return match.group(0).rstrip().endswith("%") and after[:1] in tuple("0123456789-+(")


def _figure(kind: str, m: re.Match) -> tuple[float, str, str, float]:
    """(value, shown unit, base unit, base value) of one regex match."""
    value = _number(m.group("num"))
    groups = m.groupdict()
    cur = _CURRENCIES.get((groups.get("cur") or "").casefold(), "")
    scale_word = (groups.get("scale") or "").casefold()
    scale = _SCALES.get(scale_word, 1.0)
    if kind in ("money", "scaled", "scaled_zh", "currency_word"):
        noun = groups.get("noun") or ""
        if kind == "scaled_zh":
            shown = f"{groups['scale']}{groups.get('cur') or noun}"
        else:
            shown = " ".join(p for p in (groups.get("scale") or "", cur or noun) if p)
        base = cur or (f"count:{noun.casefold()}" if noun else "count")
        return value, shown or base, base, value * scale
    unit = groups["unit"]
    if kind == "percent":
        points = "point" in unit.casefold() or "百分点" in unit
        return value, "pp" if points else "%", "pp" if points else "%", value
    if kind == "multiple":
        return value, "x", "x", value
    if kind == "duration":
        base = _DURATIONS.get(unit.casefold(), unit.casefold())
        return value, base, base, value
    return value, unit, f"unit:{unit.casefold()}", value


def figures(sentence: str) -> list[Figure]:
    """Every figure with a unit in a sentence, leftmost pattern first; a span
    claimed by an earlier pattern (money before plain scale) is not reused."""
    taken: list[tuple[int, int]] = []
    found: list[Figure] = []
    for kind, pattern in _FIGURE_PATTERNS:
        for m in pattern.finditer(sentence):
            if any(m.start() < e and s < m.end() for s, e in taken) or _not_a_quantity(kind, m, sentence):
                continue
            taken.append((m.start(), m.end()))
            value, unit, base, base_value = _figure(kind, m)
            found.append(Figure(value, unit, base, base_value, m.start(), m.end(),
                                measure_phrase(sentence, m.start(), m.end())))
    return sorted(found, key=lambda f: f.start)


# -- what a figure measures ------------------------------------------------------

_CLAUSE_BREAK = re.compile(r"[,;:()\[\]，；：（）、]|\s(?:and|but|while|whereas|which)\s")
_LINKING_TAIL = re.compile(
    r"(?:\s+(?:is|are|was|were|be|been|reached|reaches|rose|rises|grew|grows|fell|falls|dropped|"
    r"increased|decreased|declined|climbed|totaled|totalled|hit|stood|stands|of|at|to|by|about|around|"
    r"approximately|roughly|nearly|almost|over|under|more than|less than|up|down|some|only|just|"
    r"an estimated|estimated|the|a|an|for|in|with|has|have|had|will|would|could|can|takes|took|"
    r"needs|needed|costs|cost|saw|see|sees|reaching|reached|hitting|totaling|totalling))+\s*$", re.I)
_ZH_LINKING_TAIL = re.compile(r"(?:为|是|达到|达|约为|约|近|超过|增长了|增长|增加了|增加|下降了|下降|提高了|提高|降低了|降低|占|了|的|在|有|共|将|已|已经|高达|仅|仅为)+\s*$")
_LEADING_OF = re.compile(r"^\s*of\s+(?:the\s+)?|^\s*的", re.I)


def _clause(text: str, start: int, end: int) -> tuple[str, str]:
    """The text of the clause around [start, end), before and after the figure."""
    breaks = [m for m in _CLAUSE_BREAK.finditer(text)]
    left = max((m.end() for m in breaks if m.end() <= start), default=0)
    right = min((m.start() for m in breaks if m.start() >= end), default=len(text))
    return text[left:start], text[end:right]


def measure_phrase(sentence: str, start: int, end: int, max_words: int = 6) -> str:
    """The words a figure measures: "<measure> grew by 5%" → the words
    before; "5% of <measure>" → the words after. A heuristic; it reads
    clauses, not grammar."""
    before, after = _clause(sentence, start, end)
    before = re.sub(r"[\s\d.,%$€£¥-]+$", "", before)
    if _LEADING_OF.match(after):
        return _head_words(_LEADING_OF.sub("", after), max_words)
    phrase = _tail_words(before, max_words) or _head_words(after, max_words)
    # "…, reaching $3.5 billion": the clause has no subject; the sentence's
    # opening words (up to its first figure) usually name what is measured.
    return phrase or _tail_words(_FIRST_FIGURE.split(sentence, 1)[0], max_words)


_FIRST_FIGURE = re.compile(r"\s*(?:[$€£¥]\s?)?\d")


def _tail_words(text: str, max_words: int) -> str:
    for pattern in (_LINKING_TAIL, _ZH_LINKING_TAIL):
        text = pattern.sub("", text)
    if CJK_RUN.search(text[-1:] or " "):
        run = CJK_RUN.findall(text)
        # A run right after digits starts with their unit ("2023年…"): drop it.
        return run[-1][-12:].lstrip("年月日个") if run else ""
    words = [w.strip("\"'“”‘’") for w in text.split()]
    return " ".join(w for w in words[-max_words:] if w).strip(" -")


def _head_words(text: str, max_words: int) -> str:
    text = text.strip()
    if CJK_RUN.match(text):
        return CJK_RUN.match(text).group()[:12]
    words = [w.strip("\"'“”‘’.") for w in text.split()[:max_words]]
    return " ".join(w for w in words if w)
