"""The answer a reader reads first: the sentences of the sources that say
what the question asks, each cited, in at most ANSWER_WORDS words.

Each part of the question gets the sentence its best evidence leads with
(the part's lead, tasks/synthesis/extractive.py), and then, while the
answer is short, the most relevant other evidence of some strength that
says something the answer does not say yet (maximal marginal relevance
over its words). A sentence is quoted whole, verbatim, on one line, with
the sentence before it when it points back to it ("It …", "这样…") and the
lines it introduces when it ends on a colon ("Type:" and the command); the
passages around them are the report's evidence, below the answer.

Nothing that does not speak to the question is added to make up a count:
a point must be evidence with some strength beside its part's best."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schemas.report import ANSWER_WORDS, Insight
from tasks.common.text import reading_words
from tasks.synthesis.candidates import Sentence, Window, dangling, introduces
from tasks.synthesis.evidence import Scores
from tasks.synthesis.passages import jaccard
from tasks.synthesis.question import Question


@dataclass(frozen=True)
class AnswerOptions:
    words: float = 180.0       # more points only while the answer is shorter than this
    most_points: int = 6
    repeat: float = 0.5        # a sentence sharing this much of its words with one said says it again
    introduced_lines: int = 3  # lines a sentence ending on a colon brings with it


def answer_points(question: Question, found: list[Window], scores: Scores, leads: list[int | None],
                  strong: np.ndarray, row_columns: str, opts: AnswerOptions = AnswerOptions()) -> list[Insight]:
    """The answer: each asked part's lead sentence, then more strong
    evidence while the answer is short, each point within ANSWER_WORDS in all."""
    taken: set[int] = set()  # sentences quoted
    said: list[frozenset[str]] = []
    points: list[tuple[int, Insight]] = []  # (part, point)
    words = 0.0

    def add(i: int, part: int) -> bool:
        nonlocal words
        first, last = _span(found[i], opts)
        if taken & set(range(found[i].first, last + 1)):
            return False
        if first in taken:  # the sentence it points back to is said already
            first = found[i].first
        members = found[i].sentences[first:last + 1]
        terms = frozenset(t for s in members for t in s.terms)
        if any(jaccard(terms, other) >= opts.repeat for other in said):
            return False
        point = _point(members, _label(question, part), row_columns)
        length = reading_words(point.text)
        if words + length > ANSWER_WORDS:
            return False
        taken.update(range(first, last + 1))
        said.append(terms)
        points.append((part, point))
        words += length
        return True

    asked = [p for p, part in enumerate(question.parts) if not part.dimension]
    for p in asked:
        if leads[p] is not None:
            add(leads[p], p)
    relevance = np.max([scores.relevance[p] for p in asked], axis=0) if asked and len(found) else np.zeros(0)
    for i in np.argsort(-relevance, kind="stable"):
        if words >= opts.words or len(points) >= opts.most_points:
            break
        if strong[i] and any(scores.eligible[p][i] for p in asked):
            add(int(i), max(asked, key=lambda p: scores.relevance[p][i] if scores.eligible[p][i] else -1.0))
    order = {p: k for k, p in enumerate(asked)}
    return [point for _, point in sorted(points, key=lambda pp: order.get(pp[0], 0))]


def _span(window: Window, opts: AnswerOptions) -> tuple[int, int]:
    """The sentences a point quotes: the window's lead, the one before when
    it points back to it, and the lines it introduces (or the code after
    the paragraph it ends)."""
    sentences = window.sentences
    first = last = window.first
    if dangling(window):
        first -= 1
    while (last + 1 < len(sentences) and last - window.first < opts.introduced_lines
           and introduces(window.lead, sentences[last + 1], sentences[last])):
        last += 1
    return first, last


def _point(members: list[Sentence], label: str | None, row_columns: str) -> Insight:
    source = members[0].source
    text = " ".join(" ".join(s.text.split()) for s in members)
    if members[0].row and members[0].columns:
        text += row_columns.format(columns=members[0].columns)
    return Insight(text=text, dimension=label, citations=[source.cite(members[0].start, members[-1].end)])


def _label(question: Question, part: int) -> str | None:
    """The part a point answers, on a question of several parts."""
    if not question.multi_part:
        return None
    return question.parts[part].text.rstrip("?？ ")
