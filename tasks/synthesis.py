"""Synthesis: a task's consolidated sources → cited insights, key data
points, contradictions and gaps (spec 001's synthesis agent).

Two synthesizers share one interface, `synthesize(sources, question, plan)`:
- extractive (default, no model): ranks the sources' sentences against the
  question and the plan's key dimensions with BM25, groups them by
  dimension, merges near-identical passages (a repeat in another source
  becomes a corroborating citation), and quotes passages verbatim;
- LLM (`llm=LLMConfig`): numbered sources in, ---THOUGHT---/---JSON--- out;
  citations are mapped back to the list and any citation pointing outside
  it is dropped with a warning, never invented.

Either way every citation's quote is checked against the cited source's
text (case-, whitespace- and quote-style-insensitive); a quote that is not
there stays, marked `verified=false`, with a warning.

Failure policy of the LLM path (chosen): `llm_synthesis` raises `LLMError`
for an unreachable model or an unusable answer; `synthesize` (what flows
call) falls back to the extractive synthesizer and says so in `warnings`,
unless `fallback=False`, in which case the LLMError propagates.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import httpx

from schemas.report import (
    Citation,
    ContradictionOrGap,
    Insight,
    KeyDataPoint,
    SourceRef,
    SynthesisResult,
)
from schemas.urls import domain_of, url_scheme
from tasks.catalog import Catalog
from tasks.llm import FORMAT_INSTRUCTIONS, LLMConfig, LLMError, chat, parse_json_answer
from tasks.passages import (
    BM25,
    Figure,
    clip,
    figures,
    fold,
    has_cjk,
    jaccard,
    near_duplicate,
    quote_occurs,
    sentences,
    tokens,
    weight_len,
)

DEFAULT_MAX_SOURCES = 30  # spec 001: at most 10 per source kind, 30 in all

LABELS: dict[str, dict[str, str]] = {
    "en": {
        "no_sources": "No sources were found for this task, so there is no evidence to synthesize.",
        "gap_dimension": "No evidence was found for “{dimension}”.",
        "says_one": "{domain} reports: “{quote}”",
        "says_many": "{domain} and {others} other source(s) report: “{quote}”",
        "contradiction": "Sources may disagree on “{measure}”: {values}.",
        "no_match": "No passage shares terms with the question; the leading passages of the top-ranked sources are shown instead.",
        "title": "Research report",
        "summary": "Summary",
        "findings": "Key findings",
        "general": "General",
        "data": "Key data points",
        "issues": "Contradictions and gaps",
        "contradiction_kind": "Contradiction",
        "gap_kind": "Gap",
        "model": "Model",
        "drivers": "Core drivers",
        "relationships": "Relationships",
        "metrics": "Metrics",
        "scenarios": "Scenarios",
        "sources": "Sources",
        "warnings": "Warnings",
        "no_citations": "No citations: nothing in this report is backed by a cited source.",
        "value": "Value",
        "measure": "Measure",
        "cited": "Sources",
        "generated": "Generated",
        "synthesizer": "Synthesizer",
        "question": "Question",
        "unverified": "quote not found in the source",
        "nothing": "Nothing found.",
        "citability": "citability",
    },
    "zh": {
        "no_sources": "该任务没有找到任何来源，因此没有可供综合的证据。",
        "gap_dimension": "未找到关于“{dimension}”的证据。",
        "says_one": "{domain} 指出：“{quote}”",
        "says_many": "{domain} 等 {count} 个来源指出：“{quote}”",
        "contradiction": "各来源在“{measure}”上可能存在分歧：{values}。",
        "no_match": "没有段落与问题共享关键词，以下为排名靠前来源的开头段落。",
        "title": "研究报告",
        "summary": "执行摘要",
        "findings": "主要发现",
        "general": "综合",
        "data": "关键数据",
        "issues": "矛盾与空白",
        "contradiction_kind": "矛盾",
        "gap_kind": "空白",
        "model": "模型",
        "drivers": "核心驱动因素",
        "relationships": "关系",
        "metrics": "指标",
        "scenarios": "情景",
        "sources": "来源",
        "warnings": "警告",
        "no_citations": "无引用：本报告中没有任何内容有引用来源支持。",
        "value": "数值",
        "measure": "衡量对象",
        "cited": "来源",
        "generated": "生成时间",
        "synthesizer": "综合方式",
        "question": "问题",
        "unverified": "引文未在来源中找到",
        "nothing": "未找到内容。",
        "citability": "可引用性",
    },
}


def labels(language: str) -> dict[str, str]:
    return LABELS.get(language, LABELS["en"])


def detect_language(question: str) -> str:
    """Chinese when the question contains Chinese characters; English otherwise."""
    return "zh" if has_cjk(question) else "en"


# -- sources -------------------------------------------------------------------

@dataclass
class Source:
    """One consolidated source as the synthesizers see it."""

    number: int
    source_id: str
    url: str
    title: str = ""
    snippet: str = ""
    content_text: str = ""
    score: float = 0.0
    language: str | None = None

    @property
    def domain(self) -> str:
        return source_label(self.url)

    @cached_property
    def body(self) -> str:
        """Snippet and page text; the snippet is dropped when the page text
        already contains it, so a sentence is not read twice."""
        snippet, content = (self.snippet or "").strip(), (self.content_text or "").strip()
        if snippet and content and fold(snippet) in fold(content):
            return content
        return "\n\n".join(p for p in (snippet, content) if p)

    @cached_property
    def quotable(self) -> str:
        """Everything a quote may be taken from: the title and the body."""
        return f"{self.title or ''}\n{self.body}"

    def ref(self) -> SourceRef:
        return SourceRef(number=self.number, source_id=self.source_id, url=self.url,
                         title=self.title or "", domain=self.domain)

    def cite(self, quote: str) -> Citation:
        return Citation(source_id=self.source_id, url=self.url, title=self.title or "", quote=quote,
                        domain=self.domain, source_number=self.number)


def source_label(url: str) -> str:
    """What a citation link shows: the domain (without www.), or for a local
    file its name."""
    scheme = url_scheme(url)
    if scheme in ("http", "https"):
        return domain_of(url) or url
    if scheme == "file":
        return url.rstrip("/").rsplit("/", 1)[-1] or url
    return url


def load_sources(catalog: Catalog, task_id: str, limit: int = DEFAULT_MAX_SOURCES,
                 source_ids: list[str] | None = None) -> list[Source]:
    """A task's consolidated sources (only `source_ids` when given: a governed
    run's selection), best first, numbered from 1."""
    rows = catalog.rows("synthesis_sources", [task_id, source_ids, limit])
    return [Source(number=i, source_id=r[0], url=r[1], title=r[2] or "", snippet=r[3] or "",
                   content_text=r[4] or "", language=r[5], score=float(r[6] or 0.0))
            for i, r in enumerate(rows, start=1)]


def task_queries(catalog: Catalog, task_id: str) -> list[str]:
    return [r[0] for r in catalog.rows("synthesis_task_queries", [task_id])]


# -- the plan ------------------------------------------------------------------

def plan_dict(plan: Any) -> dict | None:
    """The plan as a dict: flows may pass the ResearchPlan model itself."""
    if plan is None or isinstance(plan, dict):
        return plan
    return plan.model_dump(mode="json") if hasattr(plan, "model_dump") else None


def plan_dimensions(plan: dict | None) -> list[str]:
    """The plan's key dimensions as strings (a model may write objects)."""
    summary = (plan or {}).get("search_summary") or {}
    dims = summary.get("key_dimensions") if isinstance(summary, dict) else None
    out: list[str] = []
    for dim in dims or []:
        text = (dim.get("name") or dim.get("dimension") or "") if isinstance(dim, dict) else str(dim)
        if text and str(text).strip() and str(text).strip() not in out:
            out.append(str(text).strip())
    return out


def resolve_question(question: str | None, plan: dict | None, queries: list[str] | None = None,
                     fallback: str = "") -> str:
    """The question to answer: given > the plan's > its topic > the task's queries."""
    plan = plan or {}
    summary = plan.get("search_summary") if isinstance(plan.get("search_summary"), dict) else {}
    for candidate in (question, plan.get("question"), summary.get("interpreted_topic")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return "; ".join(queries or []) or fallback


def _topic(plan: dict | None) -> str:
    summary = (plan or {}).get("search_summary")
    topic = summary.get("interpreted_topic") if isinstance(summary, dict) else None
    return topic if isinstance(topic, str) else ""


# -- shared finishing: verification and citability ----------------------------------

def verify_citations(result: SynthesisResult, sources: list[Source]) -> SynthesisResult:
    """Mark each citation verified when its quote occurs in the cited source."""
    by_id = {s.source_id: s for s in sources}
    for citation in result.all_citations():
        source = by_id.get(citation.source_id)
        citation.verified = bool(source) and quote_occurs(citation.quote, source.quotable)
        if not citation.verified:
            shown = clip(citation.quote, 80) or "(empty quote)"
            result.warnings.append(
                f"unverified citation: the quote “{shown}” was not found in source "
                f"S{citation.source_number} ({citation.domain})")
    return result


def citability(citations: list[Citation]) -> str:
    """high: verified by two or more sources; medium: by one; low: cited but
    unverified; none: uncited."""
    verified = {c.source_id for c in citations if c.verified}
    if len(verified) >= 2:
        return "high"
    if verified:
        return "medium"
    return "low" if citations else "none"


def finish(result: SynthesisResult, sources: list[Source]) -> SynthesisResult:
    verify_citations(result, sources)
    for item in [*result.synthesized_insights, *result.key_data_points]:
        item.citability = citability(item.citations)
    result.sources = [s.ref() for s in sources]
    return result


def no_sources_result(question: str, language: str, dims: list[str], synthesizer: str) -> SynthesisResult:
    """A task without sources: every dimension is a gap; not an error."""
    lab = labels(language)
    gaps = [ContradictionOrGap(kind="gap", description=lab["no_sources"])]
    gaps += [ContradictionOrGap(kind="gap", description=lab["gap_dimension"].format(dimension=d), dimension=d)
             for d in dims]
    return SynthesisResult(question=question, language=language, contradictions_or_gaps=gaps,
                           synthesizer=synthesizer, warnings=["no sources: nothing to synthesize"])


# -- extractive synthesizer ------------------------------------------------------

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


# -- LLM synthesizer ---------------------------------------------------------------

SYSTEM_PROMPT = (
    "You are a research synthesis agent. You receive a research question and a numbered list of "
    "sources (S1, S2, ...). Use only these sources. Every claim must cite the sources it rests on by "
    "their number, each with a quote copied character for character from that source (a sentence or "
    "a phrase, in the source's own language; never translate or paraphrase a quote). Do not cite a "
    "source number that is not in the list. Report figures with their units, disagreements between "
    "sources (contradictions) and key dimensions the sources do not cover (gaps).\n" + FORMAT_INSTRUCTIONS
)
JSON_SHAPE = """{
  "synthesized_insights": [{"text": "the insight", "dimension": "a key dimension or null",
                            "citations": [{"source": 1, "quote": "exact words from S1"}]}],
  "key_data_points": [{"value": 12.5, "unit": "%", "measure": "what the figure measures",
                       "text": "the statement", "citations": [{"source": 2, "quote": "..."}]}],
  "contradictions_or_gaps": [{"kind": "contradiction or gap", "description": "...",
                              "citations": [{"source": 3, "quote": "..."}]}]
}"""


@dataclass(frozen=True)
class LLMOptions:
    chars_per_source: int = 3000
    total_chars: int = 30000


def _source_block(source: Source, limit: int) -> str:
    return f"[S{source.number}] {source.title}\nURL: {source.url}\n{clip(source.body, limit)}"


def llm_messages(sources: list[Source], question: str, plan: dict | None,
                 opts: LLMOptions = LLMOptions()) -> list[dict]:
    """The prompt: the question, the plan's dimensions, the numbered sources
    (each cut to fit the budget), the JSON shape and the output language."""
    per_source = max(300, min(opts.chars_per_source, opts.total_chars // max(1, len(sources))))
    blocks = "\n\n".join(_source_block(s, per_source) for s in sources)
    dims = plan_dimensions(plan)
    language = ("Write every text and description in Simplified Chinese (简体中文); quotes stay in the "
                "source's language." if detect_language(question) == "zh" else "Write in English.")
    user = (f"Question: {question}\n"
            + (f"Key dimensions: {'; '.join(dims)}\n" if dims else "")
            + f"\nSources:\n{blocks}\n\n{language}\nThe JSON object has this shape:\n{JSON_SHAPE}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


_REF_NUMBER = re.compile(r"^\s*\[?\s*(?:s|source|src|来源)?\s*#?\s*(\d+)\s*\]?\s*$", re.I)


def resolve_source(ref: Any, sources: list[Source]) -> Source | None:
    """The listed source a model's reference names: a number (3, "S3", "[3]")
    or a source_id or URL from the list; None for anything else."""
    by_number = {s.number: s for s in sources}
    if isinstance(ref, bool):
        return None
    if isinstance(ref, (int, float)) and float(ref).is_integer():
        return by_number.get(int(ref))
    if isinstance(ref, str):
        match = _REF_NUMBER.match(ref)
        if match:
            return by_number.get(int(match.group(1)))
        return next((s for s in sources if ref.strip() in (s.source_id, s.url)), None)
    return None


_REF_KEYS = ("source", "source_number", "source_id", "number", "id", "ref", "url", "sid")
_QUOTE_KEYS = ("quote", "text", "excerpt", "evidence")


def _citations(raw: Any, where: str, sources: list[Source], warnings: list[str]) -> list[Citation]:
    out: list[Citation] = []
    for item in raw if isinstance(raw, list) else ([raw] if raw is not None else []):
        ref = next((item[k] for k in _REF_KEYS if k in item), None) if isinstance(item, dict) else item
        quote = next((item[k] for k in _QUOTE_KEYS if isinstance(item.get(k), str)), "") \
            if isinstance(item, dict) else ""
        source = resolve_source(ref, sources)
        if source is None:
            warnings.append(f"{where}: cited source {ref!r}, which is not in the source list; citation dropped")
            continue
        out.append(source.cite(quote.strip()))
    return out


_FIRST_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _FIRST_NUMBER.search(value) if isinstance(value, str) else None
    return float(match.group().replace(",", "")) if match else None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _kind(value: Any) -> str:
    text = _text(value).casefold()
    return "contradiction" if ("contra" in text or "矛盾" in text or "冲突" in text) else "gap"


def _items(data: dict, key: str) -> list:
    value = data.get(key)
    return value if isinstance(value, list) else []


def from_llm_json(data: dict, sources: list[Source], question: str) -> SynthesisResult:
    """Map a model's JSON onto a SynthesisResult (unverified as yet)."""
    keys = ("synthesized_insights", "key_data_points", "contradictions_or_gaps")
    if not any(isinstance(data.get(k), list) for k in keys):
        raise LLMError("the model's JSON has none of synthesized_insights, key_data_points, contradictions_or_gaps")
    warnings: list[str] = []
    insights = []
    for n, raw in enumerate(_items(data, "synthesized_insights"), start=1):
        raw = raw if isinstance(raw, dict) else {"text": raw}
        insights.append(Insight(text=_text(raw.get("text")) or _text(raw.get("insight")),
                                dimension=_text(raw.get("dimension")) or None,
                                citations=_citations(raw.get("citations"), f"insight {n}", sources, warnings)))
    points = []
    for n, raw in enumerate(_items(data, "key_data_points"), start=1):
        value = _number(raw.get("value")) if isinstance(raw, dict) else None
        if value is None:
            warnings.append(f"key data point {n}: no numeric value; dropped")
            continue
        points.append(KeyDataPoint(value=value, unit=_text(raw.get("unit")), measure=_text(raw.get("measure")),
                                   text=_text(raw.get("text")),
                                   citations=_citations(raw.get("citations"), f"key data point {n}", sources, warnings)))
    issues = []
    for n, raw in enumerate(_items(data, "contradictions_or_gaps"), start=1):
        raw = raw if isinstance(raw, dict) else {"description": raw}
        issues.append(ContradictionOrGap(kind=_kind(raw.get("kind")), description=_text(raw.get("description")),
                                         citations=_citations(raw.get("citations"), f"item {n} of contradictions_or_gaps",
                                                              sources, warnings)))
    warnings += [f"insight {n}: no citation" for n, i in enumerate(insights, start=1) if not i.citations]
    return SynthesisResult(question=question, language=detect_language(question),
                           synthesized_insights=[i for i in insights if i.text], key_data_points=points,
                           contradictions_or_gaps=[i for i in issues if i.description], warnings=warnings)


def llm_synthesis(sources: list[Source], question: str, plan: dict | None, config: LLMConfig, *,
                  client: httpx.Client | None = None, opts: LLMOptions = LLMOptions()) -> SynthesisResult:
    """Synthesis by a model; LLMError when it cannot be reached or its answer
    has no usable JSON. A task without sources costs no model call."""
    if not sources:
        return no_sources_result(question, detect_language(question), plan_dimensions(plan), f"llm:{config.model}")
    answer = chat(config, llm_messages(sources, question, plan, opts), client=client)
    result = from_llm_json(parse_json_answer(answer.content), sources, question)
    result.synthesizer = f"llm:{config.model}"
    result.tokens = answer.tokens
    return finish(result, sources)


# -- the interface flows call --------------------------------------------------------

def synthesize(sources: list[Source], question: str, plan: dict | None = None, *,
               llm: LLMConfig | None = None, client: httpx.Client | None = None,
               fallback: bool = True) -> SynthesisResult:
    """Extractive unless `llm` is given; an LLM failure falls back to the
    extractive synthesizer with a warning (or raises, with fallback=False)."""
    started = time.monotonic()
    plan = plan_dict(plan)
    if llm is None:
        result = extractive_synthesis(sources, question, plan)
    else:
        try:
            result = llm_synthesis(sources, question, plan, llm, client=client)
        except LLMError as exc:
            if not fallback:
                raise
            result = extractive_synthesis(sources, question, plan)
            result.warnings.insert(0, f"LLM synthesis failed ({exc}); the extractive synthesizer was used instead")
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


def synthesize_task(catalog: Catalog, task_id: str, plan: dict | None = None, *, question: str | None = None,
                    llm: LLMConfig | None = None, client: httpx.Client | None = None, fallback: bool = True,
                    max_sources: int = DEFAULT_MAX_SOURCES, source_ids: list[str] | None = None) -> SynthesisResult:
    """Load a task's consolidated sources and synthesize them. The question is
    `question`, else the plan's, else the task's query texts."""
    sources = load_sources(catalog, task_id, max_sources, source_ids)
    plan = plan_dict(plan)
    text = resolve_question(question, plan, task_queries(catalog, task_id), fallback=task_id)
    result = synthesize(sources, text, plan, llm=llm, client=client, fallback=fallback)
    result.task_id = task_id
    return result
