"""Reporting (docs/reports.md): synthesis + blueprint → ResearchReport
(markdown, outline, cited sources, metadata) and its JSON. Publishing it to
the lake is tasks.reporting.report; report.html is tasks.reporting.html.

Citations are numbered per cited source, in order of first appearance
([1], [2], …); `sources[].noteIndex` is that number.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

from schemas.report import (
    Citation,
    ModelBlueprint,
    OutlineSection,
    ReportMetadata,
    ReportSource,
    ResearchReport,
    SynthesisResult,
)
from tasks.reporting.layout import answer_of, dimension_groups, displayed, figure, unique_citations
from tasks.reporting.markdown import render_markdown_text
from tasks.synthesis.labels import labels


# -- numbering -----------------------------------------------------------------

def note_numbers(synthesis: SynthesisResult) -> dict[str, int]:
    """source_id → note number of each source a verified quote cites, in
    the order a reader meets them (answer, evidence by dimension, data
    points, contradictions and gaps)."""
    numbers: dict[str, int] = {}
    insights = [synthesis.synthesized_insights[i] for g in dimension_groups(synthesis).values() for i in g]
    items = [*answer_of(synthesis), *insights, *synthesis.key_data_points, *synthesis.contradictions_or_gaps]
    for item in items:
        for citation in unique_citations(item.citations):
            numbers.setdefault(citation.source_id, len(numbers) + 1)
    return numbers


def numbered(synthesis: SynthesisResult) -> SynthesisResult:
    """A copy of the synthesis with one numbering of its sources: cited
    sources first, by note number, then the others in their order; every
    citation's `source_number` is its source's number. report.md, .json
    and .html all show these numbers."""
    notes = note_numbers(synthesis)
    numbers = dict(notes)
    for ref in synthesis.sources:
        numbers.setdefault(ref.source_id, len(numbers) + 1)
    copy = synthesis.model_copy(deep=True)
    copy.sources = sorted((r.model_copy(update={"number": numbers[r.source_id]}) for r in copy.sources),
                          key=lambda r: r.number)
    for citation in copy.all_citations():
        citation.source_number = numbers.get(citation.source_id)
    return copy


def report_sources(synthesis: SynthesisResult) -> list[ReportSource]:
    first: dict[str, Citation] = {}
    for c in synthesis.all_citations():
        if c.verified:
            first.setdefault(c.source_id, c)
    numbers = note_numbers(synthesis)
    return [ReportSource(title=first[sid].title or first[sid].url, url=first[sid].url, noteIndex=n,
                         domain=first[sid].domain, sourceId=sid)
            for sid, n in sorted(numbers.items(), key=lambda kv: kv[1])]


# -- the report ----------------------------------------------------------------

def _outline(s: SynthesisResult, b: ModelBlueprint | None, sources: list[ReportSource]) -> list[OutlineSection]:
    lab = labels(s.language)
    sections = [OutlineSection(heading=lab["answer"], bullets=[p.text for p in answer_of(s)])]
    for dimension, indices in dimension_groups(s).items():
        sections.append(OutlineSection(heading=f"{lab['findings']}: {dimension or lab['general']}",
                                       bullets=[s.synthesized_insights[i].text for i in indices]))
    if s.key_data_points:
        sections.append(OutlineSection(heading=lab["data"], bullets=[
            f"{p.measure}: {figure(p.value, p.unit)}" for p in s.key_data_points]))
    if s.contradictions_or_gaps:
        sections.append(OutlineSection(heading=lab["issues"], bullets=[i.description for i in s.contradictions_or_gaps]))
    if b is not None and b.coreDrivers:
        sections.append(OutlineSection(heading=lab["drivers"], bullets=[d.name for d in b.coreDrivers]))
    sections.append(OutlineSection(heading=lab["sources"], bullets=[f"[{x.noteIndex}] {x.title}" for x in sources]
                                   or [lab["no_citations"]]))
    return sections


def build_report(synthesis: SynthesisResult, blueprint: ModelBlueprint | None = None, *,
                 task_id: str | None = None, generated_at: datetime | None = None) -> ResearchReport:
    """The ResearchReport of a synthesis (and blueprint): markdown with
    numbered, linked citations, outline, cited sources, metadata."""
    started = time.monotonic()
    synthesis = numbered(synthesis)
    sources = report_sources(synthesis)
    citations = synthesis.all_citations()
    model_ms = blueprint.metadata.durationMs if blueprint else 0
    meta = ReportMetadata(
        taskId=task_id or synthesis.task_id, question=synthesis.question, language=synthesis.language,
        synthesizer=synthesis.synthesizer,
        generatedAt=(generated_at or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        sourceCount=len(synthesis.sources), citationCount=len(citations),
        unverifiedCount=sum(1 for c in citations if not c.verified),
        insightCount=len(synthesis.synthesized_insights), noCitations=not sources,
        tokens=synthesis.tokens + (blueprint.metadata.tokens if blueprint else 0),
        warnings=[*synthesis.warnings, *(blueprint.metadata.warnings if blueprint else [])])
    markdown = render_markdown_text(*displayed((synthesis, blueprint, sources, meta)))
    report_ms = int((time.monotonic() - started) * 1000)
    meta.stepDurationsMs = {"synthesis": synthesis.duration_ms, "modeling": model_ms, "reporting": report_ms}
    meta.durationMs = synthesis.duration_ms + model_ms + report_ms
    return ResearchReport(markdown=markdown, outline=_outline(synthesis, blueprint, sources), sources=sources,
                          metadata=meta, synthesis=synthesis, model=blueprint)


def render_markdown(report: ResearchReport) -> str:
    return report.markdown


def render_json(report: ResearchReport) -> str:
    return json.dumps(report.to_contract(), ensure_ascii=False, indent=2) + "\n"
