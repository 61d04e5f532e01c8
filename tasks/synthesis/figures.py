"""Figures with units in a sentence ("40%", "$3.5 billion", "2 周") and
the words that say what each measures. No model, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tasks.common.text import CJK_RUN


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
