"""Evidence for a question: which sentences of the sources answer each part
of it, scored with the machinery that ranks the pages.

A candidate is a sentence (or a list item) of a source's stored text, never
its title, a heading or a code line, quoted verbatim with its offsets, and
read in its context: the source's title, the heading it sits under and the
sentences around it ("Feed it twice a day." under "Sourdough starter"
answers "How often do I feed the starter?").

For each part of the question (tasks/synthesis/question.py) a sentence gets:
- coverage: the share of the part's words (weighted by idf over all the
  candidates, so a rare word counts more than one every sentence holds) the
  sentence holds, a word held only by its context counting `CONTEXT_CREDIT`;
- lexical: BM25 of the sentence for the part, its words expanded by
  pseudo-relevance feedback (RM3) as the library's search expands a query
  (tasks/retrieval/bm25.py), so a sentence in the sources' own wording of
  the question scores too;
- dense: the cosine of the sentence (with its title) and the question with
  the library's embedding model — English text only: the model is English,
  and on Chinese text it measured worse than none;
- answer type: whether it holds the kind of answer the part wants (a
  duration for "how long", a temperature, a frequency, a figure);
- the source's place in the task's ranking (retrieval judged the whole page).

A window's support for a part is its coverage, helped a little by the answer
type and the dense similarity (nothing, when the window itself holds less
than `OWN_SHARE` of the part). From `ELIGIBLE` on it is evidence; a part
whose best support stays below `SURE` is only touched by the sources, which
the report says; a part with no evidence at all is a gap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from wordfreq import zipf_frequency

from tasks.common.text import CJK_RUN, normalize, terms
from tasks.retrieval.bm25 import TermIndex, feedback_weights
from tasks.synthesis.base import Source
from tasks.synthesis.passages import block_spans, clip, figures, fold, has_cjk, sentence_spans, weight_len
from tasks.synthesis.question import (DEFINITION, DURATION, FREQUENCY, MEASURES, QUANTITY, TEMPERATURE, Part, Question,
                                      holds)

CONTEXT_CREDIT = 0.5   # a word the sentence's title, heading or neighbours hold, not the sentence itself
MEANING_CREDIT = 0.6   # a word only matched by meaning, at most
MEANING_FLOOR, MEANING_FULL = 0.25, 0.6  # word cosines: below the floor no credit, from FULL on all of it
ELIGIBLE = 0.3         # evidence: support at least this ...
OWN_SHARE = 0.1        # ... and the window itself holding at least this share of the part's weight
SURE = 0.6             # support from which a part counts as answered, not only touched
TYPE_WEIGHT = 0.2
DENSE_WEIGHT = 0.3
DENSE_SAY = 0.15       # what the dense similarity adds towards ELIGIBLE
LEXICAL_WEIGHT = 0.25
RANK_WEIGHT = 0.3      # the prior for the source ranked first, falling as 1/rank
QUOTE_CHARS = 400
# general rarity of a word (Zipf: 7 for the commonest words, 1 for the rarest):
# (COMMON_ZIPF − zipf) / RARITY_SCALE, within [RARITY_MIN, RARITY_MAX]
COMMON_ZIPF, RARITY_SCALE, RARITY_MIN, RARITY_MAX, RARE_ZIPF = 7.0, 4.0, 0.15, 1.25, 3.0
SENTENCES_PER_SOURCE = 400
SHORT_BLOCK = 200      # a block this long or shorter is a list item or a line, not a paragraph
SHORT_SECTION = 800    # a section this long or shorter is read as one unit
DEFINING_HEAD = 4      # words a defining sentence names its subject within
CODE_CHARS = 300       # a code line or block longer than this is not quoted


# -- candidates --------------------------------------------------------------------

_CODE_MARKS = ("::=", ">>>", "{", "}", " == ", "->", "$ ")
_BULLET = re.compile(r"^(?:[-*•·]|\d{1,2}[.)]|[a-z][.)])\s+")
_ENDS_SENTENCE = re.compile(r"[.!?:;\u3002\uff01\uff1f\uff1b\uff1a][\"'\u201d\u2019)\]]*$")
_CODE_LINE = re.compile(r"^\s*[$#%>] |::|\s--?[a-z]|[=/\\|{}<>\[\]]|^\s*[a-z][\w.-]*(?:\s+[\w./=-]+)+\s*$")
# a sentence that introduces what follows it: a command, a setting, a list
_INTRODUCES = re.compile(r"[:：]\s*$|如下|下面|下列|以下|as follows|the following|below\b", re.IGNORECASE)
_PRONOUN_START = re.compile(r"^(?:it|this|that|these|those|they|he|she|such|then|so|also|but)\b|^[这它其此该]",
                            re.IGNORECASE)


@dataclass
class Sentence:
    source: Source
    start: int
    end: int        # end of the quoted part (a long sentence is quoted up to a word bound)
    full_end: int
    block: int      # the paragraph or list item it belongs to, counted through all sources
    section: int    # the run of blocks under one heading, counted likewise
    heading: str
    short_block: bool = False  # its block is a list item or a line, not a paragraph of prose
    short_section: bool = False  # its section is a few lines, one unit of meaning
    statement: bool = True     # a sentence to quote as evidence; else a line of code it may introduce

    @property
    def text(self) -> str:
        return self.source.text[self.start:self.end]

    @cached_property
    def terms(self) -> list[str]:
        return terms(self.text)

    @cached_property
    def termset(self) -> frozenset[str]:
        return frozenset(self.terms)

    @cached_property
    def normal(self) -> str:
        return normalize(self.text)

    @property
    def clipped(self) -> bool:
        return self.end < self.full_end


@dataclass
class Window:
    """A candidate quote: one to MAX_RUN consecutive sentences of one section."""

    first: int
    last: int
    sentences: list[Sentence]

    @cached_property
    def members(self) -> list[Sentence]:
        return self.sentences[self.first:self.last + 1]

    @property
    def lead(self) -> Sentence:
        return self.members[0]

    @property
    def source(self) -> Source:
        return self.lead.source

    @property
    def start(self) -> int:
        return self.lead.start

    @property
    def end(self) -> int:
        return self.members[-1].end

    @property
    def text(self) -> str:
        return self.source.text[self.start:self.end]

    @cached_property
    def terms(self) -> list[str]:
        return [t for s in self.members for t in s.terms]

    @cached_property
    def termset(self) -> frozenset[str]:
        return frozenset(self.terms)

    @cached_property
    def normal(self) -> str:
        return " ".join(s.normal for s in self.members)

    @cached_property
    def context(self) -> tuple[frozenset[str], str]:
        """Title, heading and the sentences either side that go on from it:
        what the window is about without saying it."""
        before = self.sentences[self.first - 1] if self.first else None
        after = self.sentences[self.last + 1] if self.last + 1 < len(self.sentences) else None
        around = [s.text for s in (before, after) if s is not None and
                  (continues(s, self.lead) if s is before else continues(self.members[-1], s))]
        text = " ".join([self.source.title, self.lead.heading, *around])
        return frozenset(terms(text)), normalize(text)

    @cached_property
    def words(self) -> list[str]:
        """Its distinct plain words, for matching the question's by meaning."""
        return list(dict.fromkeys(w for w in re.findall(r"[a-z][a-z'-]{2,}", self.normal)))


def candidates(sources: list[Source]) -> list[Sentence]:
    sentences: list[Sentence] = []
    block_no = section = 0
    for source in sources:
        text, title = source.text, fold(source.title)
        heading = ""
        section += 1
        for start, end in block_spans(text):
            block_no += 1
            block = text[start:end]
            if _is_heading(block):
                heading, section = block.strip("#*=-~^ \t"), section + 1
                continue
            short = weight_len(" ".join(block.split())) <= SHORT_BLOCK
            for s, e in sentence_spans(text, start, end)[:SENTENCES_PER_SOURCE]:
                bullet = _BULLET.match(text[s:e])
                s += len(bullet.group()) if bullet else 0
                sentence = text[s:e]
                if fold(sentence) == title or not sentence.strip():
                    continue
                statement = quotable(sentence)
                if statement or _is_code(sentence):  # code is quoted only after a sentence that introduces it
                    quoted = s + len(clip(sentence, QUOTE_CHARS)) if statement else e
                    sentences.append(Sentence(source, s, quoted, e, block_no, section, heading, short,
                                              statement=statement))
    _mark_short_sections(sentences)
    return sentences


def _mark_short_sections(sentences: list[Sentence]) -> None:
    spans: dict[int, list[int]] = {}
    for s in sentences:
        spans.setdefault(s.section, [s.start, s.end])[1] = s.end
    for s in sentences:
        start, end = spans[s.section]
        s.short_section = weight_len(s.source.text[start:end]) <= SHORT_SECTION


def windows(sentences: list[Sentence]) -> list[Window]:
    """The candidates: each sentence on its own (a quote grows from the one
    chosen, see `quote_from`)."""
    return [Window(i, i, sentences) for i, s in enumerate(sentences) if s.statement]


def quote_from(window: Window, taken: set[int], related: set[int], limit: int) -> Window:
    """The quote a chosen sentence leads: with the sentence before when it
    opens on a word pointing back to it ("It", "This", "这"), and the
    sentences after it that go on answering — the rest of its paragraph, the
    next items of its list, a next paragraph of a short section when it is
    `related` to the question (indices of such sentences), the code a
    sentence introduces ("… set it as follows:") — while the quote stays
    within `limit` characters and they are not quoted elsewhere."""
    first, last, sentences = window.first, window.last, window.sentences
    if _dangling(window) and first - 1 not in taken:
        first -= 1
    while last + 1 < len(sentences) and last + 1 not in taken and sentences[last + 1].end - sentences[first].start <= limit:
        a, b = sentences[last], sentences[last + 1]
        if not b.statement:
            if not (a.source is b.source and a.section == b.section and (not a.statement or _INTRODUCES.search(a.text))):
                break
        elif not (a.source is b.source and a.statement and (a.block == b.block or (a.section == b.section and (
                (a.short_block and b.short_block) or (a.short_section and last + 1 in related))))):
            break
        last += 1
    return Window(first, last, sentences)


def continues(a: Sentence, b: Sentence) -> bool:
    """Whether a quote ending with sentence a may go on with sentence b: the
    next sentence of a paragraph, the next item of a list, the rest of a
    short section — not another paragraph of a long text."""
    return a.source is b.source and (a.block == b.block or (a.section == b.section and (
        a.short_section or (a.short_block and b.short_block))))


def _is_heading(block: str) -> bool:
    """A block of one short line that states nothing ("## Setup", "How long");
    not a line of code."""
    flat = " ".join(block.split())
    return "\n" not in block.strip() and (flat.startswith("#") or (weight_len(flat) <= 60 and not
                                                                     _ENDS_SENTENCE.search(flat) and not _is_code(flat)))


def _is_code(text: str) -> bool:
    """A command, a configuration line or a path: what documentation shows in code blocks."""
    return bool(_CODE_LINE.search(text)) and weight_len(" ".join(text.split())) <= CODE_CHARS


def quotable(sentence: str) -> bool:
    """A sentence a reader can take as evidence: it states (a question, as in
    a FAQ, answers nothing) and is mostly words (not code or a table row)."""
    flat = " ".join(sentence.split())
    if weight_len(flat) < 20 or any(mark in flat for mark in _CODE_MARKS) or flat.startswith("#"):
        return False
    if flat.rstrip("\"'\u201d\u2019)]").endswith(("?", "\uff1f")):
        return False
    if sum(ch.isalpha() or ch.isspace() for ch in flat) < 0.6 * len(flat):
        return False
    # a few Chinese characters among names and paths are a label, not a statement
    return sum(len(run) for run in CJK_RUN.findall(flat)) >= 6 or len(flat.split()) >= 3 and not has_cjk(flat)


# -- answer types --------------------------------------------------------------------

_NUMBER_WORDS = r"(?:\d+(?:[.,]\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a few|several|half an?)"
_TIME_UNITS = r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|months?|years?)"
_ANSWER_PATTERNS = {
    DURATION: re.compile(rf"\b{_NUMBER_WORDS}[\s-]+(?:full\s+)?{_TIME_UNITS}\b|\bovernight\b|"
                         r"[0-9一二三四五六七八九十两几半]+\s*(?:秒|分钟|小时|天|周|星期|个月|年)", re.IGNORECASE),
    FREQUENCY: re.compile(rf"\bevery\s+(?:{_NUMBER_WORDS}\s+)?(?:other\s+)?{_TIME_UNITS}\b|\b(?:once|twice|"
                          rf"\d+\s+times)\s+(?:a|an|per|each)\s+{_TIME_UNITS}\b|\b(?:daily|weekly|monthly|yearly|"
                          r"nightly|hourly)\b|每(?:天|日|周|星期|月|年|小时|隔)|一天.次|定期", re.IGNORECASE),
    TEMPERATURE: re.compile(r"\d\s*(?:°|º|degrees?\b|℃|℉)|\d\s?[CF]\b|摄氏|华氏|\d+\s*度"),
    QUANTITY: re.compile(r"\d|[一二三四五六七八九十两百千万亿半]"),
}


def defines(sentence: Sentence, subject: str | None) -> bool:
    """A sentence that opens on what the part asks about, its weightiest
    word ("The with statement is used to …", "A decorator is …")."""
    head = normalize(" ".join(sentence.text.split()[:DEFINING_HEAD]))
    return subject is not None and holds(subject, frozenset(terms(head)), head)


def answers_type(sentence: Sentence, answer: str | None) -> bool:
    pattern = _ANSWER_PATTERNS.get(answer or "")
    if pattern is None:
        return False
    if answer == QUANTITY:
        return bool(figures(sentence.text)) or bool(pattern.search(sentence.text))
    return bool(pattern.search(sentence.text))


# -- scoring ---------------------------------------------------------------------------

@dataclass
class Scores:
    """Per part of the question, per candidate window."""

    coverage: list[np.ndarray]
    own: list[np.ndarray]
    relevance: list[np.ndarray]
    eligible: list[np.ndarray]
    support: list[float] = field(default_factory=list)  # per part, its best window's
    supports: list[np.ndarray] = field(default_factory=list)  # per part, per window
    touched: list[np.ndarray] = field(default_factory=list)

    def best_relevance(self) -> np.ndarray:
        if not self.relevance:
            return np.zeros(0)
        return np.max(np.where(self.eligible, self.relevance, 0.0), axis=0)

    def related(self) -> np.ndarray:
        """Per window: it holds something of some part (a word, or the kind of answer)."""
        return np.any(self.touched, axis=0) if self.touched else np.zeros(0, dtype=bool)

    def answered(self) -> list[bool]:
        """Per part: some window speaks to it."""
        return [bool(e.any()) for e in self.eligible]

    def sure(self) -> list[bool]:
        """Per part: some window speaks to it clearly (not only touches it)."""
        return [support >= SURE for support in self.support]


def score(question: Question, found: list[Window]) -> Scores:
    out = Scores([], [], [], [])
    if not found:
        out.eligible = [np.zeros(0, dtype=bool) for _ in question.parts]
        out.support = [0.0 for _ in question.parts]
        return out
    idf = _weights(question, found)
    dense = _dense(question, found)
    index = TermIndex([w.terms for w in found])
    prior = np.array([RANK_WEIGHT / max(1, w.source.number) for w in found])
    meaning = _meaning(question, found)
    for part in question.parts:
        own, coverage = _coverage(part, found, idf, meaning)
        subject = max(part.words, key=lambda w: idf[w]) if part.words else None
        typed = np.array([answers_type(w.lead, part.answer) or (part.answer == DEFINITION and defines(w.lead, subject))
                          for w in found], dtype=float)
        measure = part.answer in MEASURES
        support = (coverage + TYPE_WEIGHT * typed * measure + DENSE_SAY * dense) * (own >= OWN_SHARE)
        eligible = support >= ELIGIBLE
        relevance = (coverage + LEXICAL_WEIGHT * _lexical(index, part) + DENSE_WEIGHT * dense
                     + TYPE_WEIGHT * typed + prior)
        out.coverage.append(coverage)
        out.own.append(own)
        out.relevance.append(relevance)
        out.eligible.append(eligible)
        out.support.append(float(support.max()))
        out.supports.append(support)
        out.touched.append((own > 0) | (typed > 0))
    return out


def _dangling(window: Window) -> bool:
    before = window.sentences[window.first - 1] if window.first else None
    return bool(before is not None and before.block == window.lead.block and _PRONOUN_START.match(window.lead.text))


def _weights(question: Question, found: list[Window]) -> dict[str, float]:
    """How much each question word counts: its idf over the candidate
    sentences (a window would count a sentence up to three times), times how
    rare the word is in the language at large (wordfreq's Zipf scale): a word
    the sources lack may be a rare subject they do not cover ("salinity") or
    only common wording ("roughly"); the first weighs, the second hardly."""
    sentences = {id(s): s for w in found for s in w.members}.values()
    n = len(sentences)
    df = {w: sum(1 for s in sentences if holds(w, s.termset, s.normal)) for w in question.words}
    surfaces = {stem: word for part in question.parts for stem, word in part.surfaces.items()}
    out = {}
    for word, d in df.items():
        # a word no sentence holds weighs as the rarest that occurs
        idf = float(np.log(1 + (n - max(1, d) + 0.5) / (max(1, d) + 0.5)))
        out[word] = idf * _rarity(surfaces.get(word, word.split("|")[0]), question.language)
    return out


def _rarity(word: str, language: str) -> float:
    zipf = zipf_frequency(word, language) if not word.isdigit() else RARE_ZIPF
    return float(np.clip((COMMON_ZIPF - zipf) / RARITY_SCALE, RARITY_MIN, RARITY_MAX))


def _coverage(part: Part, found: list[Window], idf: dict[str, float],
              meaning: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(own, with context) share of the part's weight each window holds: a
    word held by the window counts whole, one it only matches by meaning (a
    word of the window the embedding model puts close to it) up to
    MEANING_CREDIT; with context, a word its title or heading holds counts
    at least CONTEXT_CREDIT."""
    if not part.words:  # a part that is only its interrogative ("how often?")
        return np.ones(len(found)), np.ones(len(found))
    total = sum(idf[w] for w in part.words) or 1.0
    own = np.zeros(len(found))
    with_context = np.zeros(len(found))
    for i, window in enumerate(found):
        terms_, text = window.context
        for word in part.words:
            if holds(word, window.termset, window.normal):
                held = idf[word]
            elif word in meaning:
                held = MEANING_CREDIT * float(meaning[word][i]) * idf[word]
            else:
                held = 0.0
            own[i] += held
            with_context[i] += max(held, CONTEXT_CREDIT * idf[word] if holds(word, terms_, text) else 0.0)
    return own / total, with_context / total


def _meaning(question: Question, found: list[Window]) -> dict[str, np.ndarray]:
    """Per Latin word of the question, per window: how close (0 to 1) the
    window's nearest word comes to it by the embedding model, where no word of
    the window is the same word."""
    surfaces = {stem: word for part in question.parts for stem, word in part.surfaces.items()
                if stem in part.words}
    if question.language == "zh" or not surfaces:
        return {}
    from tasks.retrieval.providers.library.embeddings import embed
    vocabulary = list(dict.fromkeys(w for window in found for w in window.words))
    if not vocabulary:
        return {}
    position = {w: i for i, w in enumerate(vocabulary)}
    similarity = embed(list(surfaces.values())) @ embed(vocabulary).T  # question words × vocabulary
    closeness = np.clip((similarity - MEANING_FLOOR) / (MEANING_FULL - MEANING_FLOOR), 0.0, 1.0)
    out = {}
    for row, stem in enumerate(surfaces):
        out[stem] = np.array([max((closeness[row, position[w]] for w in window.words), default=0.0)
                              for window in found])
    return out


def _lexical(index: TermIndex, part: Part) -> np.ndarray:
    wanted = terms(part.text)
    first = index.scores(wanted)
    if not len(first) or first.max() <= 0:
        return np.zeros(len(first))
    expanded = index.weighted_scores(feedback_weights(index, wanted, first))
    top = expanded.max()
    return expanded / top if top > 0 else expanded


def _dense(question: Question, found: list[Window]) -> np.ndarray:
    """Cosine of each window (with its title) and the question, scaled so
    the median window is 0 and the best 1; nothing for Chinese text."""
    if question.language == "zh":
        return np.zeros(len(found))
    from tasks.retrieval.providers.library.embeddings import embed
    vectors = embed([f"{w.source.title}: {w.text}" for w in found])
    cosine = vectors @ embed([question.text])[0]
    low, high = float(np.median(cosine)), float(cosine.max())
    return np.clip((cosine - low) / (high - low), 0.0, 1.0) if high > low else np.zeros(len(found))
