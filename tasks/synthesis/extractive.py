"""The extractive synthesizer (the default, no model).

It quotes the sentences of the sources that answer the question:
- candidates are prose sentences of each source's stored text (never its
  title, a heading or a code line), quoted verbatim with their offsets;
- a sentence must cover at least 40% of the question's content-term
  weight (idf over the sentences; see tasks/synthesis/focus.py), so a
  sentence sharing one common word with the question is never quoted;
- eligible sentences are ranked by that coverage, BM25, the question's word
  pairs and the source's rank, and picked with maximal marginal relevance
  (relevance against similarity to what is already picked) after the best
  sentence of each aspect of the question;
- near-identical sentences in other documents corroborate; two sources of
  one document (one page) count once;
- figures become key data points only when they are measures (a number, a
  unit, the words it measures) in such a sentence;
- when no sentence of any source passes the 40% rule, the closest sentence
  of the page the search ranked first (at least 25%) is quoted, said to
  cover only part of the question: retrieval judged that whole page the
  likeliest answer, so its closest sentence is the likeliest partial one;
- when no sentence covers the question, or an aspect of it, the report says
  so as a gap instead of quoting noise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from schemas.report import ContradictionOrGap, Insight, KeyDataPoint, SynthesisResult
from tasks.common.text import terms
from tasks.synthesis.base import Source, finish, no_sources_result, plan_dimensions
from tasks.synthesis.focus import Aspect, Focus, aspects, question_pairs, words
from tasks.synthesis.labels import detect_language, labels
from tasks.synthesis.passages import (
    BM25,
    Figure,
    clip,
    figures,
    fold,
    has_cjk,
    jaccard,
    near_duplicate,
    sentence_spans,
    weight_len,
)

ASPECT_COVERAGE = 0.5  # share of an aspect's term weight a sentence must hold to speak to it

# -- candidate sentences -------------------------------------------------------------

_CODE_MARKS = ("::=", ">>>", "{", "}", " == ", " = ", "->", "$ ")
_ENDS_SENTENCE = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")


_FRAGMENT_START = re.compile(r"^[a-z]+\b(?![.(_])")


def is_prose(sentence: str, min_len: int = 25, min_letters: float = 0.7) -> bool:
    """A sentence a reader can quote as evidence: it states (a question, as
    in a FAQ, answers nothing), is mostly words (not a grammar rule, code or
    a table row) and does not begin in the middle of another sentence."""
    flat = " ".join(sentence.split())
    if weight_len(flat) < min_len or not _ENDS_SENTENCE.search(flat) or any(m in flat for m in _CODE_MARKS):
        return False
    if flat.rstrip("\"'\u201d\u2019)]").endswith(("?", "\uff1f")):
        return False
    if sum(ch.isalpha() or ch.isspace() for ch in flat) < min_letters * len(flat):
        return False
    if has_cjk(flat):
        return True
    # A plain lower-case word opens the rest of a sentence ("however, ..."),
    # while a name in code may ("pyproject.toml is ...").
    return len(flat.split()) >= 4 and not _FRAGMENT_START.match(flat)


@dataclass
class _Sentence:
    source: Source
    start: int
    end: int        # end of the quoted part (a long sentence is quoted up to a word bound)
    full_end: int   # end of the sentence
    terms: list[str]

    @property
    def text(self) -> str:
        return self.source.text[self.start:self.end]

    @property
    def clipped(self) -> bool:
        return self.end < self.full_end

    @cached_property
    def termset(self) -> frozenset[str]:
        return frozenset(self.terms)

    @cached_property
    def phrase_text(self) -> str:
        return f" {' '.join(words(self.text))} "


@dataclass(frozen=True)
class ExtractiveOptions:
    max_insights: int = 8
    per_document: int = 2
    max_data_points: int = 10
    max_contradictions: int = 5
    quote_chars: int = 400
    sentences_per_source: int = 600
    min_coverage: float = 0.4   # share of the question's term weight a quoted sentence must hold
    partial_coverage: float = 0.25  # ... the closest sentence of the first-ranked page, quoted as partial
    diversity: float = 0.3      # MMR: weight of similarity to what is already picked
    rank_weight: float = 0.7    # the prior for the source retrieval ranked first (1/rank after it)
    pool: int = 300


def _sentences(sources: list[Source], opts: ExtractiveOptions) -> list[_Sentence]:
    out = []
    for source in sources:
        text, title = source.text, fold(source.title)
        for start, end in sentence_spans(text)[:opts.sentences_per_source]:
            sentence = text[start:end]
            if not is_prose(sentence) or fold(sentence) == title:
                continue
            quoted = start + len(clip(sentence, opts.quote_chars))
            held = terms(sentence)
            if len(held) >= 3:
                out.append(_Sentence(source, start, quoted, end, held))
    return out


# -- relevance -----------------------------------------------------------------------

@dataclass
class _Finding:
    """A sentence and the near-identical sentences of other documents."""

    lead: _Sentence
    relevance: float
    members: list[_Sentence] = field(default_factory=list)

    def documents(self) -> set[str]:
        return {self.lead.source.document, *(m.source.document for m in self.members)}


def _relevance(sentences: list[_Sentence], question: str, aspect_list: list[Aspect], focus: Focus,
               opts: ExtractiveOptions) -> list[float]:
    """Relevance of each sentence to the question, 0 for one that covers
    neither enough of the question nor all of a sufficient aspect of it:
    coverage + BM25 (scaled to the best) + the question's word pairs it
    repeats + a sentence that defines its subject + the source's
    position in the consolidated ranking (`_rank_prior`)."""
    bm25 = BM25([s.terms for s in sentences]).scores(focus.terms)
    best = max(bm25, default=0.0) or 1.0
    pairs = question_pairs(question)
    whole = [list(a.terms) for a in aspect_list if a.sufficient]
    asked = [a for a in aspect_list if a.from_question]
    out = []
    # A question of three or more terms needs two of them in a sentence: one
    # rare word ("looked") is not the question.
    floor = 2 if len(focus.terms) >= 3 else 1
    for s, b in zip(sentences, bm25):
        coverage = focus.coverage(s.termset, text=s.phrase_text) if focus.matched_terms(s.termset) >= floor else 0.0
        if coverage < opts.min_coverage and any(set(terms) <= s.termset for terms in whole):
            coverage = opts.min_coverage
        # A sentence must speak to one of the question's phrases, not only share words with it.
        if coverage < opts.min_coverage or (asked and _aspect_of(s.termset, asked, focus) is None):
            out.append(0.0)
            continue
        subject = 0.2 if _defines_subject(s, aspect_list, focus) else 0.0
        out.append(coverage + 0.3 * b / best + _pairs_held(s, pairs) + subject + _rank_prior(s.source, opts))
    return out


def _pairs_held(s: _Sentence, pairs: list[str]) -> float:
    """What repeating the question's word pairs adds: 0.15 each, two at most."""
    return 0.15 * min(2, sum(1 for p in pairs if f" {p} " in s.phrase_text))


def _rank_prior(source: Source, opts: ExtractiveOptions) -> float:
    """What retrieval's consolidated ranking adds to a sentence: `rank_weight`
    for the page it ranked first, falling as 1/rank. Retrieval judged the
    whole page; a sentence of it that speaks to the question is the likelier
    answer than an equally worded one of a page ranked tenth."""
    return opts.rank_weight / max(1, source.number)


_COPULAS = ("is", "are")


def _defines_subject(s: _Sentence, aspect_list: list[Aspect], focus: Focus, head_words: int = 8) -> bool:
    """A sentence of the form "<the question's subject> is ...": "A
    decorator is just a function that ...", "The with statement is used to
    ..." — what defines the subject."""
    head = s.phrase_text.split()[:head_words]
    verb = next((i for i, w in enumerate(head) if w in _COPULAS), None)
    if not verb:
        return False
    subject = " ".join(head[:verb])
    held = set(terms(subject))
    return (any(set(a.terms) <= held for a in aspect_list if a.from_question)
            or any(f" {p} " in f" {subject} " for p in focus.pairs))


def _findings(sentences: list[_Sentence], relevance: list[float], pool: int) -> list[_Finding]:
    """The most relevant sentences, near-duplicates merged: a repeat in the
    same document is dropped, one in another document corroborates."""
    order = sorted((i for i, r in enumerate(relevance) if r > 0), key=lambda i: -relevance[i])[:pool]
    found: list[_Finding] = []
    for i in order:
        s = sentences[i]
        home = next((f for f in found if near_duplicate(f.lead.termset, s.termset)), None)
        if home is None:
            found.append(_Finding(s, relevance[i]))
        elif s.source.document not in home.documents():
            home.members.append(s)
    return found


def _aspect_of(termset: frozenset[str], aspect_list: list[Aspect], focus: Focus) -> Aspect | None:
    """The aspect a sentence speaks to most (the first on a tie); None when
    it holds less than 40% of every aspect's term weight."""
    scored = [(focus.coverage(termset, list(a.terms)), -n, a) for n, a in enumerate(aspect_list)]
    best = max(scored, key=lambda x: x[:2], default=None)
    return best[2] if best and best[0] >= ASPECT_COVERAGE else None


def _pick(found: list[_Finding], aspect_list: list[Aspect], focus: Focus, opts: ExtractiveOptions) -> list[_Finding]:
    """The best finding of each aspect, then maximal marginal relevance:
    each next pick is the most relevant finding least like those picked, at
    most `per_document` led by one document."""
    chosen: list[_Finding] = []
    per_doc: dict[str, int] = {}

    def take(f: _Finding) -> None:
        chosen.append(f)
        per_doc[f.lead.source.document] = per_doc.get(f.lead.source.document, 0) + 1

    def open_(f: _Finding) -> bool:
        return f not in chosen and per_doc.get(f.lead.source.document, 0) < opts.per_document

    for aspect in aspect_list:
        best = next((f for f in found if open_(f) and _aspect_of(f.lead.termset, aspect_list, focus) == aspect), None)
        if best is not None and len(chosen) < opts.max_insights:
            take(best)
    top = max((f.relevance for f in found), default=1.0) or 1.0
    while len(chosen) < opts.max_insights:
        candidates = [f for f in found if open_(f)]
        if not candidates:
            break
        take(max(candidates, key=lambda f: (1 - opts.diversity) * f.relevance / top - opts.diversity * max(
            (jaccard(f.lead.termset, c.lead.termset) for c in chosen), default=0.0)))
    return sorted(chosen, key=lambda f: -f.relevance)


def _closest(sentences: list[_Sentence], question: str, focus: Focus,
             opts: ExtractiveOptions) -> _Sentence | None:
    """For a question no sentence passes the coverage rule for: the closest
    sentence of the page the search ranked first — holding at least
    `partial_coverage` of the question's term weight and the two-term floor,
    the most of that weight and of the question's word pairs — or None when
    nothing in that page comes close."""
    floor = 2 if len(focus.terms) >= 3 else 1
    pairs = question_pairs(question)
    close = [(focus.coverage(s.termset, text=s.phrase_text), s) for s in sentences
             if s.source.number == 1 and focus.matched_terms(s.termset) >= floor]
    scored = [(c + _pairs_held(s, pairs), -i, s) for i, (c, s) in enumerate(close) if c >= opts.partial_coverage]
    best = max(scored, key=lambda x: x[:2], default=None)
    return best[2] if best else None


def _shown_quote(s: _Sentence) -> str:
    """The quote as the report shows it: one line, an ellipsis where the
    sentence goes on (the citation keeps the verbatim words only)."""
    return " ".join(s.text.split()) + (" …" if s.clipped else "")


def _insight(finding: _Finding, aspect: Aspect | None, lab: dict[str, str]) -> Insight:
    domain, quote = finding.lead.source.domain, _shown_quote(finding.lead)
    others = len(finding.documents()) - 1
    text = (lab["says_many"].format(domain=domain, others=others, count=others + 1, quote=quote,
                                    sources="source" if others == 1 else "sources") if others
            else lab["says_one"].format(domain=domain, quote=quote))
    return Insight(text=text, dimension=aspect.label if aspect else None,
                   citations=[s.source.cite(s.start, s.end) for s in [finding.lead, *finding.members]])


def _partial_insight(s: _Sentence, aspect: Aspect | None, lab: dict[str, str]) -> Insight:
    return Insight(text=lab["says_partly"].format(domain=s.source.domain, quote=_shown_quote(s)),
                   dimension=aspect.label if aspect else None, citations=[s.source.cite(s.start, s.end)])


# -- key data points and contradictions ---------------------------------------------

@dataclass
class _Point:
    figure: Figure
    sentence: _Sentence
    relevance: float
    corroborating: list[_Sentence] = field(default_factory=list)

    @cached_property
    def measure_terms(self) -> frozenset[str]:
        return frozenset(t for t in terms(self.figure.measure) if not t.isdigit())

    def same_measure(self, other: "_Point") -> bool:
        return (self.figure.base_unit == other.figure.base_unit
                and jaccard(self.measure_terms, other.measure_terms) >= 0.5)

    def documents(self) -> set[str]:
        return {self.sentence.source.document, *(c.source.document for c in self.corroborating)}


def _points(sentences: list[_Sentence], relevance: list[float]) -> list[_Point]:
    """Measures in the relevant sentences; the same figure for the same
    measure in another document corroborates instead of repeating."""
    points: list[_Point] = []
    by_figure: dict[tuple[str, float], list[_Point]] = {}  # twins share unit and value
    for s, r in sorted(zip(sentences, relevance), key=lambda sr: -sr[1]):
        if r <= 0:
            continue
        for fig in figures(s.text):
            point = _Point(fig, s, r)
            if not point.measure_terms:
                continue  # a number and a unit, but nothing it measures
            same = by_figure.setdefault((fig.base_unit, round(fig.base_value, 9)), [])
            twin = next((q for q in same if q.same_measure(point)), None)
            if twin is None:
                points.append(point)
                same.append(point)
            elif s.source.document not in twin.documents():
                twin.corroborating.append(s)
    return points


def _data_point(point: _Point) -> KeyDataPoint:
    return KeyDataPoint(value=point.figure.value, unit=point.figure.unit, measure=point.figure.measure,
                        text=" ".join(point.sentence.text.split()),
                        citations=[s.source.cite(s.start, s.end) for s in [point.sentence, *point.corroborating]])


_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)")


def _disagree(a: _Point, b: _Point) -> bool:
    """Different documents, same measure and unit, figures more than 10%
    apart, and not two points of a time series (different years named)."""
    if a.sentence.source.document == b.sentence.source.document or not a.same_measure(b):
        return False
    x, y = a.figure.base_value, b.figure.base_value
    if abs(x - y) <= 0.1 * max(abs(x), abs(y)):
        return False
    years_a, years_b = set(_YEAR.findall(a.sentence.text)), set(_YEAR.findall(b.sentence.text))
    return not (years_a and years_b and years_a != years_b)


def _shown(point: _Point) -> str:
    unit = point.figure.unit
    value = f"{point.figure.value:g}"
    joined = f"{value}{unit}" if unit in ("%", "x") or has_cjk(unit) else f"{value} {unit}"
    return f"{joined} ({point.sentence.source.domain})"


def _contradictions(points: list[_Point], lab: dict[str, str], limit: int,
                    pool: int = 200) -> list[ContradictionOrGap]:
    """Pairs of disagreeing figures among the `pool` most relevant ones (a
    pairwise check: the pool bounds its cost on figure-heavy pages)."""
    found: list[ContradictionOrGap] = []
    top = points[:pool]
    for i, a in enumerate(top):
        for b in top[i + 1:]:
            if len(found) >= limit:
                return found
            if not _disagree(a, b):
                continue
            values = " vs ".join(_shown(p) for p in (a, b))
            found.append(ContradictionOrGap(
                kind="contradiction",
                description=lab["contradiction"].format(measure=a.figure.measure, values=values),
                citations=[p.sentence.source.cite(p.sentence.start, p.sentence.end) for p in (a, b)]))
    return found


# -- gaps ------------------------------------------------------------------------------

def _gaps(aspect_list: list[Aspect], sentences: list[_Sentence], focus: Focus, answered: bool, partly: bool,
          lab: dict[str, str]) -> list[ContradictionOrGap]:
    """What the sources do not cover: the question as a whole when no
    sentence covers it (said differently when a closest sentence is quoted
    as partial evidence), and each aspect no sentence of any source speaks to."""
    gaps = [] if answered else [ContradictionOrGap(kind="gap", description=lab["no_answer_partly" if partly
                                                                              else "no_answer"])]
    for aspect in aspect_list:
        if not any(focus.coverage(s.termset, list(aspect.terms)) >= ASPECT_COVERAGE for s in sentences):
            gaps.append(ContradictionOrGap(kind="gap", description=lab["gap_dimension"].format(dimension=aspect.label),
                                           dimension=aspect.label))
    return gaps


def extractive_synthesis(sources: list[Source], question: str, plan: dict | None = None,
                         opts: ExtractiveOptions = ExtractiveOptions()) -> SynthesisResult:
    language = detect_language(question)
    lab = labels(language)
    dims = plan_dimensions(plan)
    if not sources:
        return no_sources_result(question, language, dims, "extractive")
    sentences = _sentences(sources, opts)
    aspect_list = aspects(question, plan, dims)
    focus = Focus.of(question, [(s.termset, s.phrase_text) for s in sentences],
                     extra=[t for a in aspect_list for t in a.terms])
    relevance = _relevance(sentences, question, aspect_list, focus, opts)
    found = _findings(sentences, relevance, opts.pool)
    picked = _pick(found, aspect_list, focus, opts)
    insights = [_insight(f, _aspect_of(f.lead.termset, aspect_list, focus), lab) for f in picked]
    closest = None if picked else _closest(sentences, question, focus, opts)
    if closest is not None:
        insights = [_partial_insight(closest, _aspect_of(closest.termset, aspect_list, focus), lab)]
    points = _points(sentences, relevance)
    issues = _contradictions(points, lab, opts.max_contradictions)
    issues += _gaps(aspect_list, sentences, focus, bool(picked), closest is not None, lab)
    result = SynthesisResult(question=question, language=language, synthesized_insights=insights,
                             key_data_points=[_data_point(p) for p in points[:opts.max_data_points]],
                             contradictions_or_gaps=issues, synthesizer="extractive")
    return finish(result, sources)
