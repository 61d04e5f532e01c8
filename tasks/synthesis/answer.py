"""The answer a reader reads first: what the sources say to the question, in
their own sentences, each cited, in at most ANSWER_WORDS words.

It is drawn from the evidence (tasks/synthesis/extractive.py), in its order
— each part's best evidence first, then the most relevant other evidence.
A passage gives a point that opens with the sentence that answers (or the
sentence it points back to: "It keeps …", "In this case …", "这样…") and
runs on through the sentences of its passage that speak to the question
too (a fact often sits in the sentence after the one that names the
subject: "Feed once or twice a day." then "Only what they eat in about two
minutes.") and the lines it introduces ("Type:" and the command; a
paragraph and its code block). The sentences just before it that speak to
the question too ("Adults: once or twice a day." before "Fry need smaller
meals") follow as a point of their own. A point is one stretch of its
source, verbatim, so its one citation proves it. Sentences of the passage
that speak to nothing asked are left to the evidence below.

A point after the first is kept only as far as its sentences fit within
AnswerOptions.words (the first may take all of ANSWER_WORDS), and points
stop at a passage much weaker than the best: nothing that does not speak
to the question is added to make up a count. The options are set by
bench/tune_answer.py on the tuning halves of the judged sets."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.report import ANSWER_WORDS, Insight
from tasks.common.text import first_that_read_within, reading_words
from tasks.synthesis.candidates import Sentence, Window, introduces, points_back
from tasks.synthesis.question import Question


@dataclass(frozen=True)
class AnswerOptions:
    words: float = 300.0   # a point after the first only where it fits within this many words
    weakest: float = 0.5   # a passage below this share of the best passage's relevance adds nothing
    most_points: int = 8


@dataclass(frozen=True)
class Passage:
    """A passage of the evidence: its window, its lead candidate, what it answers."""

    window: Window
    lead: Window
    relevance: float
    part: int | None  # the part of the question it answers best


def answer_points(question: Question, passages: list[Passage], speaks: set[int], leads: dict[int, int],
                  row_columns: str, opts: AnswerOptions = AnswerOptions()) -> list[Insight]:
    """The answer's points, from the evidence `passages` in their order;
    `speaks` holds the indices of the sentences that speak to some part of
    the question, `leads` each part's best sentence."""
    if not passages:
        return []
    best = max(p.relevance for p in passages)
    points: list[tuple[int, Insight]] = []
    words, drawn = 0.0, 0
    for passage in passages:
        if points and (words >= opts.words or drawn >= opts.most_points or passage.relevance < opts.weakest * best):
            break
        drawn += 1
        first, opening, last = _stretch(passage, speaks)
        answered = [p for p, k in leads.items() if first <= k <= last] or [passage.part]
        label = _label(question, answered)
        part = min((p for p in answered if p is not None), default=0)
        # what says it first; the sentences before it that speak to the question too, after it
        for start, end in ((opening, last), (first, opening - 1)):
            # the first point may take the whole answer; a later one only what is left of opts.words
            room = (opts.words if points else ANSWER_WORDS) - words
            members = first_that_read_within(passage.window.sentences[start:end + 1], room)
            if members:
                points.append((part, _point(members, label, row_columns)))
                words += reading_words(points[-1][1].text)
    order = {p: k for k, p in enumerate(dict.fromkeys(part for part, _ in points))}
    return [point for _, point in sorted(points, key=lambda pp: order[pp[0]])]


def _stretch(passage: Passage, speaks: set[int]) -> tuple[int, int, int]:
    """The sentences of a passage a point quotes (first, opening, last): it
    opens with its lead (or the sentence the lead points back to) and runs
    on to the last sentence of the passage that speaks to the question or
    is a line the point introduces; `first` is the first of the sentences
    just before the opening that speak to the question too."""
    sentences, window, lead = passage.window.sentences, passage.window, passage.lead.first
    opening = lead - 1 if lead - 1 >= window.first and points_back(sentences, lead) else lead
    first = opening
    while first - 1 >= window.first and first - 1 in speaks:
        first -= 1
        if first - 1 >= window.first and points_back(sentences, first):
            first -= 1
    last = lead
    for k in range(lead + 1, window.last + 1):
        if k in speaks or (k == last + 1 and introduces(sentences[lead], sentences[k], sentences[k - 1])):
            last = k
    return first, opening, last


def _point(members: list[Sentence], label: str | None, row_columns: str) -> Insight:
    source = members[0].source
    text = " ".join(" ".join(s.text.split()) for s in members)
    if members[0].row and members[0].columns:
        text += row_columns.format(columns=members[0].columns)
    return Insight(text=text, dimension=label, citations=[source.cite(members[0].start, members[-1].end)])


def _label(question: Question, parts: list[int | None]) -> str | None:
    """The parts a point answers, on a question of several parts."""
    named = [question.parts[p].text.rstrip("?？ ") for p in parts if p is not None]
    return "; ".join(named) if question.multi_part and named else None
