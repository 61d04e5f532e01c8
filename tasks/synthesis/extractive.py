"""The extractive synthesizer (the default, no model): ranks the sources'
sentences against the question and the plan's key dimensions with BM25,
groups them by dimension, merges near-identical passages (a repeat in
another source becomes a corroborating citation), quotes passages
verbatim, and reads figures for key data points and contradictions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from schemas.report import ContradictionOrGap, Insight, KeyDataPoint, SynthesisResult
from tasks.synthesis.labels import detect_language, labels
from tasks.synthesis.passages import (
    BM25,
    Figure,
    clip,
    figures,
    has_cjk,
    jaccard,
    near_duplicate,
    sentences,
    tokens,
    weight_len,
)
from tasks.synthesis.base import Source, finish, no_sources_result, plan_dimensions


def _topic(plan: dict | None) -> str:
    """The plan's interpreted topic: passages are ranked against it together with the question."""
    summary = (plan or {}).get("search_summary")
    topic = summary.get("interpreted_topic") if isinstance(summary, dict) else None
    return topic if isinstance(topic, str) else ""


# -- passages and insights ------------------------------------------------------------

@dataclass
class _Passage:
    source: Source
    text: str
    terms: list[str]

    @cached_property
    def termset(self) -> frozenset[str]:
        return frozenset(self.terms)


@dataclass
class _Cluster:
    """A passage and its near-duplicates in other sources."""

    lead: _Passage
    index: int
    members: list[_Passage] = field(default_factory=list)

    def sources(self) -> set[str]:
        return {self.lead.source.source_id, *(m.source.source_id for m in self.members)}


@dataclass(frozen=True)
class ExtractiveOptions:
    max_insights: int = 12
    per_dimension: int = 3
    general_with_dimensions: int = 3
    max_data_points: int = 10
    max_contradictions: int = 5
    passage_chars: int = 400
    passages_per_source: int = 400
    min_passage_len: int = 20  # weighted length (CJK counts twice)


def _passages(sources: list[Source], opts: ExtractiveOptions) -> list[_Passage]:
    out = []
    for source in sources:
        for sentence in sentences(source.body)[:opts.passages_per_source]:
            text = clip(sentence, opts.passage_chars)
            terms = tokens(text)
            if weight_len(text) >= opts.min_passage_len and len(terms) >= 3:
                out.append(_Passage(source, text, terms))
    return out


def _prior(scores: list[float], passages: list[_Passage]) -> list[float]:
    # Consolidation already ranked the sources; let that rank break near-ties.
    return [s * (1 + 0.5 * p.source.score) for s, p in zip(scores, passages)]


def _lead_relevance(passages: list[_Passage]) -> list[float]:
    """Relevance when nothing matches the question lexically (e.g. a Chinese
    question over English pages): the first two passages of each source,
    in source rank order; the search engines judged these sources relevant."""
    seen: dict[str, int] = {}
    out = []
    for p in passages:
        seen[p.source.source_id] = seen.get(p.source.source_id, 0) + 1
        out.append(1.0 / p.source.number if seen[p.source.source_id] <= 2 else 0.0)
    return out


def _cluster(passages: list[_Passage], relevance: list[float], pool: int = 300) -> list[_Cluster]:
    """Group the most relevant passages into near-duplicate clusters; a
    repeat inside one source is dropped, one in another source corroborates."""
    order = sorted((i for i, r in enumerate(relevance) if r > 0), key=lambda i: -relevance[i])[:pool]
    clusters: list[_Cluster] = []
    for i in order:
        p = passages[i]
        home = next((c for c in clusters if near_duplicate(c.lead.termset, p.termset)), None)
        if home is None:
            clusters.append(_Cluster(p, i))
        elif p.source.source_id not in home.sources():
            home.members.append(p)
    return clusters


def _frame(cluster: _Cluster, lab: dict[str, str]) -> str:
    domain = cluster.lead.source.domain
    if not cluster.members:
        return lab["says_one"].format(domain=domain, quote=cluster.lead.text)
    n = len(cluster.members)
    return lab["says_many"].format(domain=domain, others=n, count=n + 1, quote=cluster.lead.text)


def _insight(cluster: _Cluster, dimension: str | None, lab: dict[str, str]) -> Insight:
    passages = [cluster.lead, *cluster.members]
    return Insight(text=_frame(cluster, lab), dimension=dimension,
                   citations=[p.source.cite(p.text) for p in passages])


def _take(ranked: list[_Cluster], limit: int, used: set[int], per_source: int = 2) -> list[_Cluster]:
    """The best `limit` unused clusters, at most `per_source` led by one source
    (so one long page cannot fill a dimension)."""
    taken: list[_Cluster] = []
    counts: dict[str, int] = {}
    for cluster in ranked:
        sid = cluster.lead.source.source_id
        if len(taken) >= limit:
            break
        if cluster.index in used or counts.get(sid, 0) >= per_source:
            continue
        taken.append(cluster)
        counts[sid] = counts.get(sid, 0) + 1
        used.add(cluster.index)
    return taken


def _pick_insights(clusters: list[_Cluster], q_scores: list[float], dim_scores: dict[str, list[float]],
                   opts: ExtractiveOptions, lab: dict[str, str]) -> list[Insight]:
    used: set[int] = set()
    insights: list[Insight] = []
    for dim, scores in dim_scores.items():
        ranked = sorted((c for c in clusters if scores[c.index] > 0),
                        key=lambda c: -(scores[c.index] + 0.3 * q_scores[c.index]))
        insights += [_insight(c, dim, lab) for c in _take(ranked, opts.per_dimension, used)]
    room = opts.max_insights - len(insights)
    general = opts.general_with_dimensions if dim_scores else opts.max_insights
    ranked = sorted((c for c in clusters if q_scores[c.index] > 0), key=lambda c: -q_scores[c.index])
    insights += [_insight(c, None, lab) for c in _take(ranked, max(0, min(room, general)), used)]
    return insights[:opts.max_insights]


# -- key data points and contradictions ---------------------------------------------

@dataclass
class _Point:
    figure: Figure
    passage: _Passage
    relevance: float
    corroborating: list[_Passage] = field(default_factory=list)

    @cached_property
    def measure_terms(self) -> frozenset[str]:
        return frozenset(t for t in tokens(self.figure.measure) if not t.isdigit())

    def same_measure(self, other: "_Point") -> bool:
        return (self.figure.base_unit == other.figure.base_unit
                and jaccard(self.measure_terms, other.measure_terms) >= 0.5)


def _points(passages: list[_Passage], relevance: list[float]) -> list[_Point]:
    """Figures of the relevant passages; the same figure for the same measure
    from another source corroborates instead of repeating."""
    points: list[_Point] = []
    by_figure: dict[tuple[str, float], list[_Point]] = {}  # twins share unit and value
    for p, r in sorted(zip(passages, relevance), key=lambda pr: -pr[1]):
        if r <= 0:
            continue
        for fig in figures(p.text):
            point = _Point(fig, p, r)
            same = by_figure.setdefault((fig.base_unit, round(fig.base_value, 9)), [])
            twin = next((q for q in same if q.same_measure(point)), None)
            if twin is None:
                points.append(point)
                same.append(point)
            elif p.source.source_id not in {twin.passage.source.source_id,
                                            *(c.source.source_id for c in twin.corroborating)}:
                twin.corroborating.append(p)
    return points


def _data_point(point: _Point) -> KeyDataPoint:
    passages = [point.passage, *point.corroborating]
    return KeyDataPoint(value=point.figure.value, unit=point.figure.unit, measure=point.figure.measure,
                        text=point.passage.text, citations=[p.source.cite(p.text) for p in passages])


_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)")


def _disagree(a: _Point, b: _Point) -> bool:
    """Different sources, same measure and unit, figures more than 10% apart,
    and not two points of a time series (different years named)."""
    if a.passage.source.source_id == b.passage.source.source_id or not a.same_measure(b):
        return False
    x, y = a.figure.base_value, b.figure.base_value
    if abs(x - y) <= 0.1 * max(abs(x), abs(y)):
        return False
    years_a, years_b = set(_YEAR.findall(a.passage.text)), set(_YEAR.findall(b.passage.text))
    return not (years_a and years_b and years_a != years_b)


def _shown(point: _Point) -> str:
    unit = point.figure.unit
    value = f"{point.figure.value:g}"
    joined = f"{value}{unit}" if unit in ("%", "x") or has_cjk(unit) else f"{value} {unit}"
    return f"{joined} ({point.passage.source.domain})"


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
                citations=[p.passage.source.cite(p.passage.text) for p in (a, b)]))
    return found


def extractive_synthesis(sources: list[Source], question: str, plan: dict | None = None,
                         opts: ExtractiveOptions = ExtractiveOptions()) -> SynthesisResult:
    language = detect_language(question)
    lab = labels(language)
    dims = plan_dimensions(plan)
    if not sources:
        return no_sources_result(question, language, dims, "extractive")
    passages = _passages(sources, opts)
    index = BM25([p.terms for p in passages])
    q_scores = _prior(index.scores(tokens(f"{question} {_topic(plan)}")), passages)
    dim_scores = {d: _prior(index.scores(tokens(d)), passages) for d in dims}
    relevance = [max([q, *(s[i] for s in dim_scores.values())]) for i, q in enumerate(q_scores)]
    warnings: list[str] = []
    if not any(relevance):
        warnings.append(lab["no_match"])
        relevance = q_scores = _lead_relevance(passages)
    clusters = _cluster(passages, relevance)
    insights = _pick_insights(clusters, q_scores, dim_scores, opts, lab)
    points = _points(passages, relevance)
    covered = {i.dimension for i in insights}
    issues = _contradictions(points, lab, opts.max_contradictions)
    issues += [ContradictionOrGap(kind="gap", description=lab["gap_dimension"].format(dimension=d), dimension=d)
               for d in dims if d not in covered]
    result = SynthesisResult(question=question, language=language, synthesized_insights=insights,
                             key_data_points=[_data_point(p) for p in points[:opts.max_data_points]],
                             contradictions_or_gaps=issues, synthesizer="extractive", warnings=warnings)
    return finish(result, sources)
