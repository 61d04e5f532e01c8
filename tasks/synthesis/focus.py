"""What the question asks, as the extractive synthesizer measures it: the
question's content terms weighted by how rare they are among the sources'
sentences, how much of that weight a sentence covers, the question's word
pairs ("with statement"), and the aspects a report groups its findings by
(readable phrases taken from the question, or an LLM plan's dimensions)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tasks.common.text import phrases
from tasks.synthesis.passages import fold, tokens

MAX_ASPECTS = 4
_WORDS = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The folded words of a text, stopwords kept: what word pairs match on."""
    return _WORDS.findall(fold(text))


def question_pairs(question: str) -> list[str]:
    """Adjacent word pairs of the question that hold one of its content
    terms: "the with statement" gives "with statement", a phrase a passage
    about it repeats while "statement" alone is everywhere."""
    ws = words(question)
    content = set(tokens(question))
    return list(dict.fromkeys(f"{a} {b}" for a, b in zip(ws, ws[1:])
                              if len(a) > 1 and len(b) > 1 and (set(tokens(a)) | set(tokens(b))) & content))


@dataclass
class Focus:
    """The question's content terms with their idf over a pool of sentences
    (rare terms weigh most: "garbage" more than "Python" in a Python corpus)."""

    terms: list[str]
    idf: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, text: str, pool: Iterable[frozenset[str]], extra: Iterable[str] = ()) -> "Focus":
        terms = list(dict.fromkeys(tokens(text)))
        wanted = set(terms) | set(extra)
        pool = list(pool)
        df = Counter(t for termset in pool for t in termset & wanted)
        n = len(pool)
        # A term no sentence holds weighs as the rarest one that occurs: it
        # counts against every sentence's coverage without dwarfing the rest.
        idf = {t: math.log(1 + (n - max(1, df[t]) + 0.5) / (max(1, df[t]) + 0.5)) for t in wanted}
        return cls(terms, idf)

    def coverage(self, termset: frozenset[str], terms: list[str] | None = None) -> float:
        """The share of the terms' idf weight a sentence holds, in [0, 1]."""
        terms = self.terms if terms is None else terms
        total = sum(self.idf.get(t, 0.0) for t in terms)
        if total <= 0:
            return 0.0
        return sum(self.idf.get(t, 0.0) for t in terms if t in termset) / total


@dataclass(frozen=True)
class Aspect:
    """One thing the question asks about, named in the question's own words."""

    label: str
    terms: tuple[str, ...]
    # Whether a sentence holding all of the aspect's terms is relevant on
    # that ground alone: a model planner's dimension, or a phrase of two or
    # more content words ("reference cycles"); not a lone word like "Python".
    sufficient: bool = False


def aspects(question: str, plan: dict | None, dimensions: list[str]) -> list[Aspect]:
    """What findings are grouped by: a model planner's key dimensions when
    it gave some, otherwise the question's phrases (runs of content words in
    the question's own spelling: "Python's garbage collector", "reference
    cycles") — never a stem and never a framing word like "work"."""
    from_model = (plan or {}).get("planner") != "keywords" and dimensions
    labels = dimensions if from_model else phrases(question)
    found: list[Aspect] = []
    for label in labels:
        terms = tuple(dict.fromkeys(tokens(label)))
        if terms and all(set(terms) != set(a.terms) for a in found):
            found.append(Aspect(" ".join(label.split()), terms, sufficient=bool(from_model) or len(terms) >= 2))
    return found[:MAX_ASPECTS]
