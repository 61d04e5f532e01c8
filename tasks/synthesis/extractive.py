"""The extractive synthesizer (the default, no model).

It quotes the sentences of the sources that answer the question, each part
of it (tasks/synthesis/question.py), chosen by tasks/synthesis/evidence.py:
- a sentence is evidence for a part when it holds enough of what the part
  asks (its words, weighted by rarity, some held by the sentence's context:
  title, heading, neighbours; the kind of answer it wants; its meaning, by
  the library's embedding model) — never a title, a heading or code;
- the best evidence of each part leads, quoted as the passage of its
  section around it (tasks/synthesis/candidates.py: quote_from; back over
  the sentences the sentence model reads near the question only from
  evidence of some strength), then the most relevant remaining evidence
  least like what is already quoted (maximal marginal relevance), at most
  `per_document` quotes led by one document;
- near-identical sentences in other documents corroborate; two sources of
  one document (one page) count once;
- figures become key data points only when they are measures (a number, a
  unit, the words it measures) in evidence of some strength beside each
  part's best (a sentence that barely touches the question gives none);
- a part no source speaks to clearly is said as a gap; when no part is, the
  report says the sources do not answer the question — and when passages
  touch it, that only such passages are quoted (from the leads' documents
  and those whose best passage comes close to the leads');
- sources in another language than the question, holding none of its
  words but names (a Chinese question over English pages: "Python"), are
  quoted where the sentence model, which reads across languages, finds
  them closest to the question, read in the order the search ranked them,
  under a caution that says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from schemas.report import ContradictionOrGap, Insight, KeyDataPoint, SynthesisResult
from tasks.common.text import evidence_terms, has_han
from tasks.synthesis.answer import AnswerOptions, Passage, answer_points
from tasks.synthesis.base import Source, finish, no_sources_result, plan_dimensions
from tasks.synthesis.candidates import Sentence, Window, candidates, quote_from, windows
from tasks.synthesis.evidence import Scores, score
from tasks.synthesis.parameters import PARAMETERS, Parameters
from tasks.synthesis.labels import labels
from tasks.synthesis.figures import Figure, figures
from tasks.synthesis.passages import jaccard, near_duplicate
from tasks.synthesis.question import Part, Question, read_question


@dataclass(frozen=True)
class ExtractiveOptions:
    max_insights: int = 8
    per_document: int = 6
    max_data_points: int = 10
    max_contradictions: int = 5
    diversity: float = 0.3      # MMR: weight of similarity to what is already quoted
    pool: int = 300
    quote_chars: int = 800      # a quote runs on through its section up to this length
    fill_share: float = 0.5     # more quotes than the leads: support at least this share of the best,
    fill_close_share: float = 0.4  # or this share where the sentence model reads it nearer the question than most
    grow_back: float = 0.5      # a quote grows back through its passage from evidence of at least this support
    rank_margin: float = 0.15   # a better-ranked page's evidence leads when its relevance is this close
    hedge_margin: float = 0.3   # no part answered clearly: more from documents whose best evidence is this close
    answer: AnswerOptions = AnswerOptions()  # how the answer is drawn from the evidence


# -- findings ---------------------------------------------------------------------------

@dataclass
class _Finding:
    """A quote (a window of one source) and the near-identical windows of
    other documents that corroborate it."""

    window: Window
    index: int  # of the window among the candidates
    relevance: float
    members: list[Window] = field(default_factory=list)

    def documents(self) -> set[str]:
        return {self.window.source.document, *(m.source.document for m in self.members)}


def _pick(question: Question, found: list[Window], scores: Scores, strong: np.ndarray,
          opts: ExtractiveOptions) -> list[_Finding]:
    """The best evidence of each part, then by maximal marginal relevance
    among the `strong` evidence; no sentence is quoted twice."""
    best = scores.best_relevance()
    related = {found[i].first for i in np.flatnonzero(scores.related())}
    close = {found[i].first for i in np.flatnonzero(scores.closeness > 0)}  # nearer the question than most
    support = np.max(scores.supports, axis=0) if scores.supports else np.zeros(len(found))
    chosen: list[_Finding] = []
    used: set[int] = set()
    per_doc: dict[str, int] = {}
    orders = _orders(question, scores)
    # each part's best evidence leads a quote of its own: another quote does not reach back over it
    apart = {found[_lead(order, scores.relevance[p], found, opts)].first for p, order in enumerate(orders) if order}

    def open_(i: int) -> bool:
        w = found[i]
        return (not used & set(range(w.first, w.last + 1))
                and per_doc.get(w.source.document, 0) < opts.per_document)

    def take(i: int) -> None:
        w = quote_from(found[i], used, related, opts.quote_chars, apart - {found[i].first},
                       close if support[i] >= opts.grow_back else frozenset())
        used.update(range(w.first, w.last + 1))
        # the same passage in another document, whatever the quotes grew into around it
        home = next((f for f in chosen if near_duplicate(f.window.termset, w.termset)
                     or near_duplicate(found[f.index].termset, found[i].termset)), None)
        if home is not None:
            if w.source.document not in home.documents():
                home.members.append(w)
            return
        chosen.append(_Finding(w, i, float(best[i])))
        per_doc[w.source.document] = per_doc.get(w.source.document, 0) + 1

    for p, order in enumerate(orders):
        order = [i for i in order if open_(i)]
        if order:
            take(_lead(order, scores.relevance[p], found, opts))
    leads = len(chosen)
    top = float(best.max()) if len(best) and best.max() > 0 else 1.0
    # past each part's lead, only evidence of some strength beside the best
    if not any(scores.sure()) and chosen:
        # passages that only touch the question: more only from the leads' documents and those whose best
        # evidence comes close to the leads' (the lead may be the wrong one of two near-equal pages)
        floor = min(f.relevance for f in chosen) - opts.hedge_margin
        near_leads = {f.window.source.document for f in chosen} | {w.source.document for i, w in enumerate(found)
                                                                   if best[i] >= floor}
        strong = strong & np.array([w.source.document in near_leads for w in found], dtype=bool)
    pool = [int(i) for i in np.argsort(-best, kind="stable") if strong[i]][:opts.pool]
    while len(chosen) < opts.max_insights:
        open_pool = [i for i in pool if open_(i)]
        if not open_pool:
            break
        pick = max(open_pool, key=lambda i: (1 - opts.diversity) * best[i] / top - opts.diversity * max(
            (_alike(found[i], f.window) for f in chosen), default=0.0))
        take(pick)
    return chosen[:leads] + sorted(chosen[leads:], key=lambda f: -f.relevance)


def _orders(question: Question, scores: Scores) -> list[list[int]]:
    """Per part, its evidence from the most relevant down."""
    return [[int(i) for i in np.argsort(-scores.relevance[p], kind="stable") if scores.eligible[p][i]]
            for p in range(len(question.parts))]


def _passage(finding: _Finding, question: Question, found: list[Window], scores: Scores) -> Passage:
    """A finding as the answer reads it: its passage, its lead sentence and
    the part of the question it answers best."""
    i = finding.index
    asked = [(scores.relevance[p][i], p) for p, part in enumerate(question.parts)
             if not part.dimension and scores.eligible[p][i]]
    return Passage(finding.window, found[i], finding.relevance, max(asked)[1] if asked else None)


def _lead_sentences(question: Question, found: list[Window], scores: Scores, opts: ExtractiveOptions) -> dict[int, int]:
    """Each asked part's best sentence (its index), where it has evidence."""
    return {p: found[_lead(order, scores.relevance[p], found, opts)].first
            for p, order in enumerate(_orders(question, scores)) if order and not question.parts[p].dimension}


def _speaking(found: list[Window], scores: Scores) -> set[int]:
    """The sentences that speak to some part of the question: evidence for
    it, or holding enough of its words or the kind of answer it wants."""
    speaking = scores.related() | np.any(scores.eligible, axis=0) if scores.eligible else np.zeros(0, dtype=bool)
    return {found[i].first for i in np.flatnonzero(speaking)}


def _alike(window: Window, quoted: Window) -> float:
    """How much a candidate repeats a quote: the words they share — but a
    row of a table quoted repeats only its columns' words, and answers on
    its own ("systemctl set-default multi-user" below "systemctl isolate
    multi-user")."""
    if window.lead.row and any(m.row and m.section == window.lead.section for m in quoted.members):
        return 0.0
    return jaccard(window.termset, quoted.termset)


def _strong(scores: Scores, opts: ExtractiveOptions) -> np.ndarray:
    """Per window: evidence with some strength beside each part's best."""
    if not scores.supports:
        return np.zeros(0, dtype=bool)
    near = scores.closeness > 0 if len(scores.closeness) else np.zeros(len(scores.supports[0]), dtype=bool)
    return np.any([(support >= opts.fill_share * best) | ((support >= opts.fill_close_share * best) & near)
                   for support, best in zip(scores.supports, scores.support)], axis=0) & np.any(scores.eligible, axis=0)


def _label_of(finding: _Finding, question: Question, scores: Scores) -> str | None:
    """What a finding is filed under: the planner's dimension it speaks to
    best, else the part of a multi-part question it answers best, else
    nothing (one question, one heading)."""
    def best(parts: list[int]) -> int | None:
        held = [(scores.relevance[k][finding.index], k) for k in parts if scores.eligible[k][finding.index]]
        return max(held)[1] if held else None
    dimension = best([k for k, p in enumerate(question.parts) if p.dimension])
    if dimension is not None:
        return _label(question.parts[dimension])
    part = best([k for k, p in enumerate(question.parts) if not p.dimension]) if question.multi_part else None
    return _label(question.parts[part]) if part is not None else None


def _lead(order: list[int], relevance: np.ndarray, found: list[Window], opts: ExtractiveOptions) -> int:
    """A part's lead: the most relevant evidence, or one nearly as relevant
    from a page the search ranked higher (retrieval judged whole pages; the
    better-ranked page that answers leads)."""
    close = [i for i in order if relevance[i] >= relevance[order[0]] - opts.rank_margin]
    return min(close, key=lambda i: (found[i].source.number, -relevance[i]))


def _insight(finding: _Finding, label: str | None, lab: dict[str, str]) -> Insight:
    window = finding.window
    quote = _quoted(window, lab) + (" …" if window.members[-1].clipped else "")
    others = len(finding.documents()) - 1
    text = (lab["says_many"].format(domain=window.source.domain, others=others, count=others + 1, quote=quote,
                                    sources="source" if others == 1 else "sources") if others
            else lab["says_one"].format(domain=window.source.domain, quote=quote))
    if window.lead.row and window.lead.columns:
        text += lab["row_columns"].format(columns=window.lead.columns)
    citations = [w.source.cite(w.start, w.end) for w in [window, *finding.members]]
    return Insight(text=text, dimension=label, citations=citations)


def _quoted(window: Window, lab: dict[str, str]) -> str:
    """The quote as the reader reads it: its words verbatim, on one line,
    and the rows of a table it spans told apart ("9 | SIGKILL;
    15 | SIGTERM") instead of run together by their bars."""
    if not any(m.row for m in window.members):
        return _one_line(window.text)
    out = ""
    for before, member in zip([None, *window.members], window.members):
        glue = "" if before is None else lab["rows_between"] if before.row and member.row else " "
        out += glue + _one_line(member.text)
    return out


_WRAPPED_AT_HYPHEN = re.compile(r"(?<=[a-z]-)[ \t]*\n\s*(?=[a-z])")


def _one_line(text: str) -> str:
    """Whitespace made one space, and a compound the source wrapped after
    its hyphen ("reference-\n   counting") whole again."""
    return " ".join(_WRAPPED_AT_HYPHEN.sub("", text).split())


def _label(part: Part | None) -> str | None:
    if part is None:
        return None
    return part.text if part.dimension else part.text.rstrip("?？ ")


# -- key data points and contradictions ---------------------------------------------

@dataclass
class _Point:
    figure: Figure
    sentence: Sentence
    relevance: float
    corroborating: list[Sentence] = field(default_factory=list)

    @cached_property
    def measure_terms(self) -> frozenset[str]:
        return frozenset(t for t in evidence_terms(self.figure.measure) if not t.isdigit())

    def same_measure(self, other: "_Point") -> bool:
        return (self.figure.base_unit == other.figure.base_unit
                and jaccard(self.measure_terms, other.measure_terms) >= 0.5)

    def documents(self) -> set[str]:
        return {self.sentence.source.document, *(c.source.document for c in self.corroborating)}


def _points(sentences: list[Sentence], relevance: list[float]) -> list[_Point]:
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
    joined = f"{value}{unit}" if unit in ("%", "x") or has_han(unit) else f"{value} {unit}"
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

def _gaps(question: Question, scores: Scores, lab: dict[str, str]) -> list[ContradictionOrGap]:
    """What the sources do not answer: the question as a whole when no part
    of it has evidence, when it names what no source mentions, or when each
    of its parts asks for a measure no evidence gives (the passages quoted
    only touch on it); else, when some part is answered clearly, each part
    no source speaks to clearly (said differently when passages touch it);
    and each of a planner's dimensions no source speaks to."""
    asked = [(p, a, s, g) for p, a, s, g in zip(question.parts, scores.answered(), scores.sure(), scores.gives_measure)
             if not p.dimension]
    whole = None
    if not any(a for _, a, _, _ in asked):
        whole = lab["no_answer"]
    elif scores.across_languages:
        whole = lab["across_languages"]
    elif scores.unmentioned:
        whole = lab["no_mention"].format(names=", ".join(f"“{name}”" for name in scores.unmentioned))
    elif not any(g for *_, g in asked):
        whole = lab["no_answer_partly"]
    if whole is not None:
        gaps = [ContradictionOrGap(kind="gap", description=whole)]
    elif any(s for _, _, s, _ in asked):
        gaps = [ContradictionOrGap(kind="gap", description=lab["gap_part_touched" if a else "gap_part"].format(
                    part=_label(p)), dimension=_label(p)) for p, a, s, _ in asked if not s and question.multi_part]
    else:
        gaps = []
    return gaps + [ContradictionOrGap(kind="gap", description=lab["gap_dimension"].format(dimension=p.text),
                                      dimension=p.text)
                   for p, a in zip(question.parts, scores.answered()) if p.dimension and not a]


def extractive_synthesis(sources: list[Source], question_text: str, plan: dict | None = None,
                         opts: ExtractiveOptions = ExtractiveOptions(),
                         params: Parameters = PARAMETERS) -> SynthesisResult:
    question = read_question(question_text)
    if (plan or {}).get("planner") != "keywords":  # a model planner's dimensions say what the topic spans
        question = question.with_dimensions(plan_dimensions(plan))
    lab = labels(question.language)
    if not sources:
        return no_sources_result(question_text, question.language, [p.text for p in question.parts if p.dimension],
                                 "extractive")
    found = windows(candidates(sources))
    scores = score(question, found, params)
    strong = _strong(scores, opts)
    picked = _pick(question, found, scores, strong, opts)
    insights = [_insight(f, _label_of(f, question, scores), lab) for f in picked]
    answer = answer_points(question, [_passage(f, question, found, scores) for f in picked], _speaking(found, scores),
                           _lead_sentences(question, found, scores, opts), lab["row_columns"], opts.answer)
    # figures only from evidence of some strength: a measure in a sentence that barely touches the question is noise
    relevance = np.where(strong, scores.best_relevance(), 0.0)
    points = _points([w.lead for w in found], [float(r) for r in relevance])
    issues = _contradictions(points, lab, opts.max_contradictions)
    issues += _gaps(question, scores, lab)
    result = SynthesisResult(question=question_text, language=question.language, answer=answer,
                             synthesized_insights=insights,
                             key_data_points=[_data_point(p) for p in points[:opts.max_data_points]],
                             contradictions_or_gaps=issues, synthesizer="extractive")
    return finish(result, sources)
