"""Evidence for a question: which sentences of the sources answer each part
of it, scored with the machinery that ranks the pages.

A candidate (tasks/synthesis/candidates.py) is a sentence or list item of a
source's stored text, read in its context: the source's title, the heading
it sits under and the sentences around it ("Feed it twice a day." under
"Sourdough starter" answers "How often do I feed the starter?").

For each part of the question (tasks/synthesis/question.py) a sentence gets:
- coverage: the share of the part's words the sentence holds, each weighted
  by its idf over the candidates times its rarity in the language at large;
  a word held only by its context counts `context_credit` (tasks/synthesis/parameters.py), one its nearest
  word matches by meaning up to `meaning_credit`;
- lexical: BM25 of the sentence for the part, its words expanded by
  pseudo-relevance feedback (RM3) as the library's search expands a query
  (tasks/retrieval/bm25.py), so a sentence in the sources' own wording of
  the question scores too;
- dense: the cosine of the sentence (with its title) and the question with
  the library's embedding model. The model is trained on English, and on
  Chinese it ranks whole pages worse than none (the library routes around
  it), yet between a question and the sentences of the pages found it
  helps Chinese too: with it and word meaning, nugget recall on
  debian_ref_zh went from 0.343 to 0.471 (bench/answers.py);
- answer type: whether it holds the kind of answer the part wants (a
  duration for "how long", a temperature, a frequency, a price, a figure,
  a recommendation for "which … is best");
- heading: the share of the part's words the heading above it holds, and
  whether the heading asks for the kind of answer the part wants ("How
  much and how often" above the answer to "How often should I feed …?");
- section: the share its whole section holds (heading and sentences): in
  documentation the answer is a section about the question;
- the source's place in the task's ranking (retrieval judged the whole page).

A window's relevance to a part is the sum of these (FEATURES), each weighted
as tasks/synthesis/parameters.py says: a small linear model whose weights
bench/fit_scorer.py fits.

A later part's coverage, heading and section shares in its ranking also
count the words of the parts before it, at `carried`: "怎么转换？"
after a question about line endings asks how to convert line endings.

Then the multilingual sentence model (tasks/common/sentence_model.py)
reads the `sentence_pool` windows all of the above ranks first in each
script (Chinese, other), and its closeness to the question adds to their
relevance and support: it reads whole sentences in both languages where
the signals above read words.

Across languages — the sources in another script than the question,
sharing none of its own words, only names ("Python") — the words say
nothing: the sentence model reads the first `sentence_pool` windows in
the sources' order (the search ranked the pages by meaning), and its
closeness alone is each window's relevance and support; no part counts as
answered clearly, and the report cautions that the quotes were chosen by
meaning (_across_languages).

A window's support for a part is its coverage, helped a little by the answer
type and the dense similarity; for a part that asks for a measure, a window
without one stays below `sure` (it touches the part, it does not answer
it). From `eligible` on it is evidence; a part whose best support from its
words (without the sentence model, whose closeness is only relative: some
passage is always closest) stays below `sure` is only touched by the
sources; a part with no evidence at all is a gap.

Whether the sources answer the question at all is read from two signals
that, on the tuning halves, a caution rarely wrongs (bench/HISTORY.md,
Answers): a name the question gives — a word in Latin letters rarer than
`named_zipf` in its language ("Flatpak", "steriliser") — that no source
mentions, in a sentence, a title or a heading (`unmentioned`); and a part
asking for a measure that no evidence gives (`gives_measure`). How much of
the question's words a passage holds is no such signal: a paraphrased
question shares few words with the page that answers it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from wordfreq import zipf_frequency

from tasks.common.text import evidence_terms, has_han, normalize
from tasks.retrieval.bm25 import TermIndex, feedback_weights
from tasks.synthesis.candidates import Sentence, Window
from tasks.synthesis.figures import figures
from tasks.synthesis.language import any_language
from tasks.synthesis.parameters import PARAMETERS, Parameters
from tasks.synthesis.language.zh import chinese_words
from tasks.synthesis.question import (asks_for, DEFINITION, DURATION, FREQUENCY, MEASURES, QUANTITY, TEMPERATURE,
                                      Part, Question, holds)

# The features relevance weighs (Parameters names their weights): per part, per window.
FEATURES = ("coverage", "lexical", "dense", "answer_type", "rank", "heading", "heading_asks", "section")
# ... and, for the windows it reads, the sentence model's closeness (weight Parameters.sentence)


# What a sentence giving each kind of answer holds, in any language.
_ANSWER_PATTERNS = {answer: any_language(lambda language, answer=answer: language.gives.get(answer))
                    for answer in (DURATION, FREQUENCY, TEMPERATURE, QUANTITY)}


def defines(sentence: Sentence, subject: str | None, params: Parameters = PARAMETERS) -> bool:
    """A sentence that opens on what the part asks about, its weightiest
    word ("The with statement is used to …", "A decorator is …")."""
    head = normalize(" ".join(sentence.text.split()[:params.defining_head]))
    return subject is not None and holds(subject, frozenset(evidence_terms(head)), head)


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
    worded: list[float] = field(default_factory=list)  # per part, its best window's support without the sentence model
    closeness: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per window, the sentence model's (0 outside its pool)
    gives_measure: list[bool] = field(default_factory=list)  # per part: it asks for no measure, or evidence gives it
    unmentioned: list[str] = field(default_factory=list)  # the names the question gives that no source mentions
    across_languages: bool = False  # the sources are in another language and share only names with the question
    features: list[np.ndarray] = field(default_factory=list)  # per part, windows × FEATURES
    params: Parameters = PARAMETERS

    def best_relevance(self) -> np.ndarray:
        if not self.relevance:
            return np.zeros(0)
        return np.max(np.where(self.eligible, self.relevance, 0.0), axis=0)

    def related(self) -> np.ndarray:
        """Per window: it speaks to some part (holds more than related_share of
        its words, or the kind of answer it wants)."""
        return np.any(self.touched, axis=0) if self.touched else np.zeros(0, dtype=bool)

    def answered(self) -> list[bool]:
        """Per part: some window speaks to it."""
        return [bool(e.any()) for e in self.eligible]

    def sure(self) -> list[bool]:
        """Per part: some window speaks to it clearly (not only touches it)."""
        return [support >= self.params.sure for support in self.worded]


def score(question: Question, found: list[Window], params: Parameters = PARAMETERS) -> Scores:
    out = Scores([], [], [], [], params=params)
    if not found:  # sources with nothing to quote (code only, an empty page)
        none, false = np.zeros(0), np.zeros(0, dtype=bool)
        for part in question.parts:
            for column in (out.coverage, out.own, out.relevance, out.supports):
                column.append(none)
            out.eligible.append(false)
            out.touched.append(false)
            out.support.append(0.0)
            out.worded.append(0.0)
            out.features.append(np.zeros((0, len(FEATURES))))
            out.gives_measure.append(part.answer not in MEASURES)
        return out
    idf = _weights(question, found, params)
    dense = _dense(question, found)
    index = TermIndex([w.terms for w in found])
    prior = np.array([1.0 / max(1, w.source.number) for w in found])
    meaning = _meaning(question, found, params)
    sections = _sections(found)
    weights = np.array([getattr(params, name) for name in FEATURES])
    parts = []
    for part in question.parts:
        # a later part is often about what the parts before it named ("…的换行符有什么不同？怎么转换？"):
        # their words order its evidence (ordered), they do not decide that it is answered
        own, coverage, ordered = _coverage(part, found, idf, meaning, params)
        subject = max(part.words, key=lambda w: idf[w]) if part.words else None
        typed = np.array([answers_type(w.lead, part.answer)
                          or (part.answer == DEFINITION and defines(w.lead, subject, params)) for w in found],
                         dtype=float)
        measure = part.answer in MEASURES
        support = coverage + params.type_support * typed * measure + params.dense_support * dense
        features = np.column_stack([ordered, _lexical(index, part), dense, typed, prior,
                                    _heading_share(part, found, idf, params), _heading_asks(part, found),
                                    _section_share(part, found, idf, sections, params)])
        parts.append((part, own, coverage, typed, support, features))
    out.across_languages = _across_languages(question, found, params)
    if not out.across_languages:
        close = _sentence_closeness(question, found, np.max([f @ weights for *_, f in parts], axis=0), params)
    else:  # the words the sources share with the question are names: only meaning orders them
        close = _closeness_in_order(question, found, params)
    out.closeness = close
    for part, own, coverage, typed, support, features in parts:
        if not out.across_languages:
            # only where the window holds something of the part, itself or in its context: the closest passage
            # to a question the sources do not cover is still the closest
            meant = params.sentence_support * close * (coverage > 0)
            worded, support = _measured(part, typed, support, params), _measured(part, typed, support + meant, params)
            relevance = features @ weights + params.sentence * close
        else:
            worded, support = np.zeros(len(found)), _measured(part, typed, close, params)
            relevance = params.sentence * close  # the pages' order is the search's by meaning: no rank prior
        out.coverage.append(coverage)
        out.own.append(own)
        out.features.append(features)
        out.relevance.append(relevance)
        out.eligible.append(support >= params.eligible)
        out.support.append(float(support.max()))
        out.supports.append(support)
        out.worded.append(float(worded.max()))
        out.touched.append(out.eligible[-1] if out.across_languages
                           else (own > params.related_share) | (typed > 0))
        out.gives_measure.append(part.answer not in MEASURES or bool(np.any((typed > 0) & out.eligible[-1])))
    out.unmentioned = _unmentioned(question, found, params)
    return out


def _across_languages(question: Question, found: list[Window], params: Parameters) -> bool:
    """The sources are written in another script than the question — most
    of their sentences without Chinese for a Chinese question, with it for
    another — and none of them holds a word of the question in its own
    language (a Chinese question's Chinese words; another's words that are
    not names, i.e. not rarer than named_zipf) in a sentence, a title or a
    heading: the words they share with it are names ("Python"), and only
    meaning can tell which of them speak to it."""
    sentences = list({id(s): s for w in found for s in w.members}.values())
    if not sentences:
        return False
    chinese = question.language == "zh"
    if (sum(has_han(s.text) for s in sentences) * 2 >= len(sentences)) == chinese:
        return False
    surfaces = {stem: word for part in question.asked for stem, word in part.surfaces.items()}

    def own_language(word: str) -> bool:
        if chinese:
            return has_han(word)
        surface = surfaces.get(word, word.split("|")[0])
        return not has_han(word) and zipf_frequency(surface, question.language) >= params.named_zipf

    own = [w for part in question.asked for w in part.words if own_language(w)]
    return bool(own) and not any(any(holds(w, s.termset, s.normal) for s in sentences)
                                 or any(holds(w, *window.context) for window in found) for w in own)


_NAME = re.compile(r"[a-z][\w'+.-]{2,}", re.IGNORECASE)


def _unmentioned(question: Question, found: list[Window], params: Parameters) -> list[str]:
    """The names the question gives that no source mentions in a sentence,
    a title or a heading: its words in Latin letters (a Chinese question's
    runs of characters, as the segmenter cuts them, are its wording more
    often than names) rarer than named_zipf in its language."""
    sentences = {id(s): s for w in found for s in w.members}.values()
    names = {}
    for part in question.parts:
        if part.dimension:
            continue
        for word in part.words:
            surface = part.surfaces.get(word, word.split("|")[0])
            if _NAME.fullmatch(surface) and zipf_frequency(surface, question.language) < params.named_zipf:
                names.setdefault(surface, word)
    return [_as_written(surface, question.text) for surface, word in names.items()
            if not any(holds(word, s.termset, s.normal) for s in sentences)
            and not any(holds(word, *w.context) for w in found)]


def _as_written(word: str, text: str) -> str:
    """The word as the question spells it ("CSV", not "csv")."""
    found = re.search(re.escape(word), text, re.IGNORECASE)
    return found.group() if found else word


def _measured(part: Part, typed: np.ndarray, support: np.ndarray, params: Parameters) -> np.ndarray:
    """A part that asks for a measure is answered clearly only by evidence that gives one."""
    if part.answer not in MEASURES:
        return support
    return np.where(typed > 0, support, np.minimum(support, params.untyped_measure_support))


def _sentence_closeness(question: Question, found: list[Window], relevance: np.ndarray,
                        params: Parameters) -> np.ndarray:
    """The sentence model's closeness to the question of the sentence_pool
    most relevant windows written in Chinese and of those most relevant of
    the others (each read under its heading), scaled within each script so
    its pool's median is 0 and its best 1 — or less, when the best stands
    out from the median by less than sentence_spread of cosine (a few short
    passages the model reads as much alike); 0 for the other windows. The
    other signals read words, so a passage in the other language than the
    question ranks low by them; the model reads across languages, but reads
    any passage in the question's own language as somewhat closer."""
    out = np.zeros(len(found))
    order = np.argsort(-relevance, kind="stable")
    chinese = np.array([has_han(w.text) for w in found], dtype=bool)
    for script in (True, False):
        pool = order[chinese[order] == script][:params.sentence_pool]
        if len(pool) < 2:
            continue
        out[pool] = _scaled_closeness(question, [found[i] for i in pool], params)
    return out


def _closeness_in_order(question: Question, found: list[Window], params: Parameters) -> np.ndarray:
    """The sentence model's closeness to the question of the first
    sentence_pool windows in the sources' order (the search ranked their
    pages by meaning; the words they share with the question are names),
    scaled as _sentence_closeness scales it; 0 for the other windows."""
    out = np.zeros(len(found))
    pool = sorted(range(len(found)), key=lambda i: (found[i].source.number, found[i].first))[:params.sentence_pool]
    if len(pool) < 2:  # nothing to compare it with: the one window is the closest
        out[pool] = 1.0
        return out
    out[pool] = _scaled_closeness(question, [found[i] for i in pool], params)
    return out


def _scaled_closeness(question: Question, pool: list[Window], params: Parameters) -> np.ndarray:
    """The sentence model's cosine of each window of `pool` with the question,
    scaled so the pool's median is 0 and its best 1 (less when the best stands
    out by less than sentence_spread)."""
    from tasks.common.sentence_model import closeness
    cosine = closeness(question.text, [window.as_read for window in pool])
    low, high = float(np.median(cosine)), float(cosine.max())
    return np.clip((cosine - low) / max(high - low, params.sentence_spread), 0.0, 1.0)


def _weights(question: Question, found: list[Window], params: Parameters) -> dict[str, float]:
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
        out[word] = idf * _rarity(surfaces.get(word, word.split("|")[0]), question.language, params)
    return out


def _rarity(word: str, language: str, params: Parameters) -> float:
    zipf = zipf_frequency(word, language) if not word.isdigit() else params.rare_zipf
    return float(np.clip((params.common_zipf - zipf) / params.rarity_scale, params.rarity_min, params.rarity_max))


def _coverage(part: Part, found: list[Window], idf: dict[str, float], meaning: dict[str, np.ndarray],
              params: Parameters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(own, with context, ordered) share of the part's weight each window
    holds: a word held by the window counts whole, one it only matches by
    meaning (a word of the window the embedding model puts close to it) up
    to meaning_credit; with context, a word its title or heading holds
    counts at least context_credit; ordered is with context and with the
    words carried from the parts before it (_counted), what orders a later
    part's evidence."""
    if not part.words:  # a part that is only its interrogative ("how often?")
        return np.ones(len(found)), np.ones(len(found)), np.ones(len(found))
    factor = _counted(part, params)
    total = sum(idf[w] for w in part.words) or 1.0
    total_ordered = sum(idf[w] * f for w, f in factor.items()) or 1.0
    own, with_context, ordered = np.zeros(len(found)), np.zeros(len(found)), np.zeros(len(found))
    for i, window in enumerate(found):
        terms_, text = window.context
        for word, f in factor.items():
            if holds(word, window.termset, window.normal):
                held = idf[word]
            elif word in meaning:
                held = params.meaning_credit * float(meaning[word][i]) * idf[word]
            else:
                held = 0.0
            in_context = max(held, params.context_credit * idf[word] if holds(word, terms_, text) else 0.0)
            ordered[i] += f * in_context
            if word in part.words:
                own[i] += held
                with_context[i] += in_context
    framed = np.array([any(holds(w, window.termset, window.normal) for w in part.framing) for window in found])
    bonus = params.framing_credit * framed
    return (np.minimum(1.0, own / total + bonus), np.minimum(1.0, with_context / total + bonus),
            np.minimum(1.0, ordered / total_ordered + bonus))


def _counted(part: Part, params: Parameters) -> dict[str, float]:
    """What each word counts in a part's share: its own words whole, and
    the words of the parts before it Parameters.carried."""
    return {**{w: params.carried for w in part.carried}, **{w: 1.0 for w in part.words}}


def _heading_share(part: Part, found: list[Window], weight: dict[str, float], params: Parameters) -> np.ndarray:
    """The share of the part's weight (with the words carried from the parts
    before it) the heading a window sits under holds: in documentation the
    section titled as the question is its answer."""
    factor = _counted(part, params)
    total = sum(weight[w] * f for w, f in factor.items()) or 1.0
    shares = {}
    for window in found:
        heading = window.lead.heading
        if heading not in shares:
            text = normalize(heading)
            held = frozenset(evidence_terms(heading))
            shares[heading] = sum(weight[w] * f for w, f in factor.items() if holds(w, held, text)) / total
    return np.array([shares[w.lead.heading] for w in found])


def _heading_asks(part: Part, found: list[Window]) -> np.ndarray:
    """1 where the heading a window sits under asks for the kind of answer
    the part wants ("How much and how often", "多久换一次水"), else 0."""
    asks: dict[str, bool] = {}
    for window in found:
        heading = window.lead.heading
        if heading not in asks:
            asks[heading] = asks_for(heading, part.answer)
    return np.array([float(asks[w.lead.heading]) for w in found])


def _sections(found: list[Window]) -> dict[int, tuple[frozenset[str], str]]:
    """Each section's heading and sentences, as terms and normalized text."""
    texts: dict[int, list[str]] = {}
    for sentence in found[0].sentences if found else []:
        texts.setdefault(sentence.section, [sentence.heading]).append(sentence.text)
    return {section: (frozenset(evidence_terms(" ".join(parts))), normalize(" ".join(parts)))
            for section, parts in texts.items()}


def _section_share(part: Part, found: list[Window], weight: dict[str, float],
                   sections: dict[int, tuple[frozenset[str], str]], params: Parameters) -> np.ndarray:
    """The share of the part's weight (with the words carried from the parts
    before it) the section a window sits in holds, its heading and all its
    sentences: in documentation the answer is a section about the question,
    whose sentences need not repeat it."""
    factor = _counted(part, params)
    total = sum(weight[w] * f for w, f in factor.items()) or 1.0
    shares = {section: sum(weight[w] * f for w, f in factor.items() if holds(w, held, text)) / total
              for section, (held, text) in sections.items()}
    return np.array([shares[w.lead.section] for w in found])


def _meaning(question: Question, found: list[Window], params: Parameters) -> dict[str, np.ndarray]:
    """Per word of the question, per window: how close (0 to 1) the window's
    nearest word comes to it by the embedding model, where no word of the
    window is the same word. Chinese words are jieba's, on both sides
    ("关机" finds "关闭")."""
    if question.language == "zh":
        surfaces = {w: w.split("|")[0] for part in question.parts for w in part.words if has_han(w)}
        window_words = [chinese_words(window.normal) for window in found]
    else:
        surfaces = {stem: word for part in question.parts for stem, word in part.surfaces.items()
                    if stem in part.words}
        window_words = [window.words for window in found]
    if not surfaces:
        return {}
    from tasks.retrieval.providers.library.embeddings import embed
    vocabulary = list(dict.fromkeys(w for words in window_words for w in words))
    if not vocabulary:
        return {}
    position = {w: i for i, w in enumerate(vocabulary)}
    similarity = embed(list(surfaces.values())) @ embed(vocabulary).T  # question words × vocabulary
    closeness = np.clip((similarity - params.meaning_floor) / (params.meaning_full - params.meaning_floor), 0.0, 1.0)
    if question.language == "zh":
        closeness *= _share_a_character(list(surfaces.values()), vocabulary)
    out = {}
    for row, stem in enumerate(surfaces):
        out[stem] = np.array([max((closeness[row, position[w]] for w in words), default=0.0)
                              for words in window_words])
    return out


def _share_a_character(words: list[str], vocabulary: list[str]) -> np.ndarray:
    """1 where two Chinese words share a character, else 0. Related Chinese
    words mostly share a morpheme ("关机" shut down, "关闭" close), and a model
    trained on English puts unrelated Chinese words close at random ("政策"
    policy and "医疗" medical: 0.43)."""
    return np.array([[float(bool(set(w) & set(v))) for v in vocabulary] for w in words])


def _lexical(index: TermIndex, part: Part) -> np.ndarray:
    wanted = evidence_terms(part.text)
    first = index.scores(wanted)
    if not len(first) or first.max() <= 0:
        return np.zeros(len(first))
    expanded = index.weighted_scores(feedback_weights(index, wanted, first))
    top = expanded.max()
    return expanded / top if top > 0 else expanded


def _dense(question: Question, found: list[Window]) -> np.ndarray:
    """Cosine of each window (with its title) and the question, scaled so
    the median window is 0 and the best 1."""
    from tasks.retrieval.providers.library.embeddings import embed
    vectors = embed([f"{w.source.title}: {w.text}" for w in found])
    cosine = vectors @ embed([question.text])[0]
    low, high = float(np.median(cosine)), float(cosine.max())
    return np.clip((cosine - low) / (high - low), 0.0, 1.0) if high > low else np.zeros(len(found))
