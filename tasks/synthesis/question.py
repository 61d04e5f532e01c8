"""What a question asks, as the extractive synthesizer reads it: its parts
(a question may ask two things), and for each part the words a passage about
it holds and the kind of answer it wants (a duration, a temperature, a yes
or no, …).

Words are what the search index matches on: Porter stems of the content
words for Latin text (tasks/common/text.py), and for Chinese the words jieba
segments the question into, matched as substrings of a passage (Chinese is
written without spaces, so a passage needs no segmenting to hold a word).
Answer types come from the question's own interrogative (how long, how
often, what temperature, 多久, 吗, …): the words that only frame the
question ("long" in "how long") are not what a passage must hold — the
answer's figure is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tasks.common.text import CJK_RUN, evidence_terms, normalize, tokens
from tasks.synthesis.language import (DEFINITION, DURATION, FREQUENCY, MEASURES, PLACE, PROCEDURE, QUANTITY, REASON,
                                      TEMPERATURE, YES_NO, Language, language_of)

# The kinds of answer a question may want (tasks/synthesis/language/).
__all__ = ["DEFINITION", "DURATION", "FREQUENCY", "MEASURES", "PLACE", "PROCEDURE", "QUANTITY", "REASON",
           "TEMPERATURE", "YES_NO", "Part", "Question", "asks_for", "holds", "question_words",
           "read_question", "surface_forms"]


@dataclass(frozen=True)
class Part:
    """One thing the question asks."""

    text: str
    words: tuple[str, ...]     # what a passage about it holds
    answer: str | None = None  # the kind of answer it wants
    dimension: bool = False    # a planner's key dimension of the topic, not a part of the question
    framing: tuple[str, ...] = ()  # its words that only frame the answer ("temperature" in "what temperature")
    carried: tuple[str, ...] = ()  # the words of the parts before it, its likely subject when it names none

    @property
    def surfaces(self) -> dict[str, str]:
        """Each Latin word's stem → the word as the question spells it."""
        return surface_forms(self.text)


@dataclass(frozen=True)
class Question:
    text: str
    language: str  # "zh" or "en"
    parts: tuple[Part, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w for p in self.parts for w in p.words))

    @property
    def asked(self) -> list[Part]:
        """The parts of the question itself (not a planner's dimensions)."""
        return [p for p in self.parts if not p.dimension]

    @property
    def multi_part(self) -> bool:
        return len(self.asked) > 1

    def with_dimensions(self, dimensions: list[str]) -> "Question":
        """The question with a planner's key dimensions of its topic, each
        looked for as a part of its own ("licensing" of a packaging question)."""
        extra = [Part(d, tuple(question_words(d)), None, dimension=True) for d in dimensions]
        return Question(self.text, self.language, self.parts + tuple(p for p in extra if p.words))


def read_question(text: str) -> Question:
    language = language_of(text)
    parts: list[Part] = []
    for piece in language.split(text):
        answer, framing = _answer_type(piece, language)
        said = question_words(piece)
        words = tuple(w for w in said if w not in framing)
        if not words and parts:  # "…, and how often?": the same subject as the part before
            words = parts[-1].words
        if words or answer:
            carried = tuple(dict.fromkeys(w for p in parts for w in p.words if w not in words))
            parts.append(Part(" ".join(piece.split()), words, answer, framing=tuple(w for w in said if w in framing),
                              carried=carried))
    if not parts:
        parts = [Part(" ".join(text.split()), tuple(question_words(text)), None)]
    return Question(text, language.code, tuple(_distinct(parts)))


def question_words(text: str) -> list[str]:
    """The words a passage about `text` holds: Latin stems (and a keyword
    named with its noun, "with statement"), Chinese words."""
    return language_of(text).words(text)


def surface_forms(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for token in tokens(CJK_RUN.sub(" ", text)):
        for stem in evidence_terms(token):
            found.setdefault(stem, token)
    return found


def holds(word: str, termset: frozenset[str], text: str) -> bool:
    """Whether a passage (its terms and its normalized text) holds a question
    word: a Chinese word, or one of the shorter words it is made of."""
    if CJK_RUN.match(word):
        return any(w in text for w in word.split("|"))
    if " " in word:  # a named keyword: the pair as written, the keyword perhaps in quotes ('"with" statement')
        keyword, noun = word.split(" ", 1)
        return re.search(rf"(?<![^\W_])[\"'`‘“]?{re.escape(keyword)}[\"'`’”]?\s+{re.escape(noun)}", text) is not None
    return word in termset


def asks_for(text: str, answer: str | None) -> bool:
    """Whether a text (a heading) asks for the kind of answer a part wants:
    "How much and how often" above the answer to "How often should I feed …?"."""
    if answer is None or answer == YES_NO:
        return False
    lowered = normalize(text)
    return any(cue.answer == answer and cue.asks.search(lowered) for cue in language_of(text).cues)


def _answer_type(piece: str, language: Language) -> tuple[str | None, frozenset[str]]:
    lowered = normalize(piece)
    cue = next((cue for cue in language.cues if cue.asks.search(lowered)), None)
    return (cue.answer, cue.framing) if cue else (None, frozenset())


def _distinct(parts: list[Part]) -> list[Part]:
    seen: set[tuple] = set()
    kept = []
    for part in parts:
        key = (part.words, part.answer)
        if key not in seen:
            seen.add(key)
            kept.append(part)
    return kept
