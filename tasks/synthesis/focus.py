"""What the question asks, as the extractive synthesizer measures it: the
question's content terms weighted by how rare they are among the sources'
sentences, how much of that weight a sentence covers, the question's word
pairs ("with statement"), and the aspects a report groups its findings by
(readable phrases taken from the question, or an LLM plan's dimensions)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tasks.common.text import phrases, terms, tokens

MAX_ASPECTS = 4
def words(text: str) -> list[str]:
    """The words of a text, stopwords kept: what word pairs match on."""
    return tokens(text)


def question_pairs(question: str) -> list[str]:
    """Adjacent word pairs of the question that hold one of its content
    terms ("decorator expressions"): a passage about them repeats them."""
    ws = words(question)
    content = set(terms(question))
    return list(dict.fromkeys(f"{a} {b}" for a, b in zip(ws, ws[1:])
                              if len(a) > 1 and len(b) > 1 and (set(terms(a)) | set(terms(b))) & content))


_ARTICLES = ("the", "a", "an")
_SETTING = ("in", "on", "for", "with", "using", "within", "inside")


def setting_phrase(question: str) -> str | None:
    """The question's closing phrase when it only sets the scene: "in
    Python" of "How do decorators work in Python?" says where, not what; a
    sentence about Python but not decorators does not answer it."""
    found = phrases(question)
    if len(found) < 2:
        return None
    ws, last = words(question), words(found[-1])
    for k in range(len(ws) - len(last), 0, -1):
        if ws[k:k + len(last)] == last:
            rest = ws[k + len(last):]
            return found[-1] if ws[k - 1] in _SETTING and not any(terms(w) for w in rest) else None
    return None


def named_keywords(question: str) -> list[str]:
    """Pairs in which a stopword is a name: after an article and before a
    content word, as in "the with statement" or "the is operator". The
    pair is what a passage about it must hold; "statement" alone is not."""
    ws = words(question)
    return list(dict.fromkeys(f"{b} {c}" for a, b, c in zip(ws, ws[1:], ws[2:])
                              if a in _ARTICLES and not terms(b) and terms(c)))


@dataclass
class Focus:
    """What a sentence must cover: the question's content terms and named
    keyword pairs, each weighted by its idf over a pool of sentences (rare
    units weigh most: "garbage" more than "Python" in a Python corpus)."""

    terms: list[str]
    pairs: list[str] = field(default_factory=list)
    idf: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, question: str, pool: list[tuple[frozenset[str], str]], extra: Iterable[str] = ()) -> "Focus":
        """`pool`: (terms, " words ") of every candidate sentence. The
        question's setting phrase ("in Python") is not part of what to cover."""
        setting = set(terms(setting_phrase(question) or ""))
        content = [t for t in dict.fromkeys(terms(question)) if t not in setting] or list(dict.fromkeys(terms(question)))
        pairs = named_keywords(question)
        wanted = set(content) | set(extra)
        df = Counter(t for termset, _ in pool for t in termset & wanted)
        df.update(p for _, text in pool for p in pairs if f" {p} " in text)
        n = len(pool)
        # A unit no sentence holds weighs as the rarest one that occurs: it
        # counts against every sentence's coverage without dwarfing the rest.
        idf = {u: math.log(1 + (n - max(1, df[u]) + 0.5) / (max(1, df[u]) + 0.5)) for u in [*wanted, *pairs]}
        return cls(content, pairs, idf)

    def coverage(self, termset: frozenset[str], only: list[str] | None = None, text: str = "") -> float:
        """The share of the units' idf weight a sentence holds, in [0, 1]:
        the question's terms and named pairs, or the terms `only`."""
        units = [(t, t in termset) for t in (self.terms if only is None else only)]
        if only is None:
            units += [(p, f" {p} " in text) for p in self.pairs]
        total = sum(self.idf.get(u, 0.0) for u, _ in units)
        if total <= 0:
            return 0.0
        return sum(self.idf.get(u, 0.0) for u, held in units if held) / total

    def matched_terms(self, termset: frozenset[str]) -> int:
        return sum(1 for t in self.terms if t in termset)


@dataclass(frozen=True)
class Aspect:
    """One thing the question asks about, named in the question's own words."""

    label: str
    terms: tuple[str, ...]
    # Whether a sentence holding all of the aspect's terms is relevant on
    # that ground alone: a model planner's dimension, or a phrase of two or
    # more content words ("reference cycles"); not a lone word like "Python".
    sufficient: bool = False
    # A phrase of the question (not a model's dimension): every quoted
    # sentence must speak to one of the question's own phrases.
    from_question: bool = True


def aspects(question: str, plan: dict | None, dimensions: list[str]) -> list[Aspect]:
    """What findings are grouped by: a model planner's key dimensions when
    it gave some, otherwise the question's phrases (runs of content words in
    the question's own spelling: "Python's garbage collector", "reference
    cycles", but not a closing "in Python") — never a stem and never a
    framing word like "work"."""
    from_model = (plan or {}).get("planner") != "keywords" and dimensions
    setting = setting_phrase(question)
    labels = dimensions if from_model else [_named(_noun_part(p), question) for p in phrases(question) if p != setting]
    found: list[Aspect] = []
    for label in labels:
        held = tuple(dict.fromkeys(terms(label)))
        if held and all(set(held) != set(a.terms) for a in found):
            found.append(Aspect(" ".join(label.split()), held, sufficient=bool(from_model) or len(held) >= 2,
                                from_question=not from_model))
    return found[:MAX_ASPECTS]


def _named(phrase: str, question: str) -> str:
    """A phrase with the keyword that names it: "statement" → "with statement"."""
    for pair in named_keywords(question):
        keyword, head = pair.split(" ", 1)
        if words(phrase)[:1] == [head]:
            return f"{keyword} {phrase}"
    return phrase


def _noun_part(phrase: str) -> str:
    """A phrase without its trailing participle: "class attributes looked"
    (from "How are class attributes looked up?") names "class attributes"."""
    parts = phrase.split()
    while len(parts) > 1 and parts[-1].casefold().endswith("ed"):
        parts.pop()
    return " ".join(parts)
