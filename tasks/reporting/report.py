"""Reporting (spec 002's ReportAgent): synthesis + blueprint → ResearchReport
(markdown, outline, cited sources, metadata), saved as report.md, report.json
and report.html (rendered by tasks.reporting.html), published to the lake
together with a `reports` catalog row, and loaded back.

Citations are numbered per cited source, in order of first appearance
([1], [2], …); `sources[].noteIndex` is that number. Source titles, quotes
and URLs come from the web and are untrusted: Markdown escapes its special
characters, and only http(s)/file URLs ever become links.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

import httpx

from schemas.report import (
    Citation,
    ModelBlueprint,
    OutlineSection,
    ReportMetadata,
    ReportSource,
    ResearchReport,
    SynthesisResult,
)
from tasks.common.settings import Settings
from tasks.common.text import counted
from tasks.lake.catalog import Catalog, current_flow_run, open_catalog
from tasks.lake.consolidation import UnknownTask
from tasks.lake.exports import refresh_exports
from tasks.synthesis.labels import labels
from tasks.lake.files import Lake, LakeWrite
from tasks.common.llm import LLMConfig
from tasks.synthesis.modeling import build_blueprint
from tasks.reporting.html import render_html
from tasks.reporting.layout import (
    dimension_groups,
    figure,
    linkable,
    source_numbers,
    summary_items,
    unique_citations,
    unverified_count,
)
from tasks.synthesis.synthesizer import SynthesisInput, synthesis_input, synthesize_material

FORMATS = {"md": "report.md", "html": "report.html", "json": "report.json"}


class ReportNotFound(UnknownTask):
    """No report has been published for the task. (An UnknownTask, so the
    CLI's existing handler prints it as a one-line error.)"""


# -- numbering -----------------------------------------------------------------

def note_numbers(synthesis: SynthesisResult) -> dict[str, int]:
    """source_id → note number of each source a verified quote cites, in
    the order a reader meets them (summary, findings by dimension, data
    points, contradictions and gaps)."""
    numbers: dict[str, int] = {}
    insights = [*summary_items(synthesis), *(i for g in dimension_groups(synthesis).values() for i in g)]
    items = [*(synthesis.synthesized_insights[i] for i in insights), *synthesis.key_data_points,
             *synthesis.contradictions_or_gaps]
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


# -- Markdown ------------------------------------------------------------------

_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>|#"})


def md_text(text: str) -> str:
    """Untrusted text made inert in Markdown: one line, specials escaped (a
    title like <script> stays text in any renderer)."""
    return " ".join((text or "").split()).translate(_MD_SPECIAL)


def md_url(url: str) -> str:
    return "".join({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E"}.get(ch, ch) for ch in url.strip())


def md_cites(citations: list[Citation], numbers: dict[str, int], lab: dict) -> str:
    """The item's note marks ([n] linking to the source); a quote that was
    not found in its source gets no number, only a warning mark."""
    marks = []
    for c in unique_citations(citations):
        n = numbers[c.source_id]
        marks.append(f"[\\[{n}\\]]({md_url(c.url)})" if linkable(c.url) else f"\\[{n}\\]")
    if unverified_count(citations):
        marks.append(f"*({lab['unverified']})*")
    return (" " + " ".join(marks)) if marks else ""


def _md_findings(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> list[str]:
    lines = [f"## {lab['findings']}", ""]
    if not s.synthesized_insights:
        return lines + [lab["nothing"], ""]
    for dimension, indices in dimension_groups(s).items():
        lines += [f"### {md_text(dimension) if dimension else lab['general']}", ""]
        lines += [f"- {md_text(s.synthesized_insights[i].text)}{md_cites(s.synthesized_insights[i].citations, numbers, lab)}"
                  for i in indices]
        lines.append("")
    return lines


def _md_data(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> list[str]:
    if not s.key_data_points:
        return []
    lines = [f"## {lab['data']}", "", f"| {lab['value']} | {lab['measure']} | {lab['cited']} |", "| --- | --- | --- |"]
    lines += [f"| {md_text(figure(p.value, p.unit))} | {md_text(p.measure)} |{md_cites(p.citations, numbers, lab)} |"
              for p in s.key_data_points]
    return lines + [""]


def _md_issues(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> list[str]:
    if not s.contradictions_or_gaps:
        return []
    lines = [f"## {lab['issues']}", ""]
    for item in s.contradictions_or_gaps:
        kind = lab["contradiction_kind" if item.kind == "contradiction" else "gap_kind"]
        lines.append(f"- **{kind}**: {md_text(item.description)}{md_cites(item.citations, numbers, lab)}")
    return lines + [""]


def _md_model(b: ModelBlueprint | None, lab: dict) -> list[str]:
    if b is None or not (b.coreDrivers or b.metrics or b.scenarios):
        return []
    lines = [f"## {lab['model']}", ""]
    if b.coreDrivers:
        lines += [f"### {lab['drivers']}", ""]
        lines += [f"- **{md_text(d.name)}**: {md_text(d.description)}" for d in b.coreDrivers] + [""]
    if b.relationships:
        lines += [f"### {lab['relationships']}", ""]
        lines += [f"- {md_text(r.from_)} → {md_text(r.to)} ({md_text(r.type)}, {r.confidence:.2f})"
                  for r in b.relationships] + [""]
    if b.scenarios:
        lines += [f"### {lab['scenarios']}", ""]
        lines += [f"- **{md_text(x.name)}** ({x.confidence:.2f}): {md_text('; '.join(x.outcomes))}"
                  for x in b.scenarios] + [""]
    if b.metrics:
        lines += [f"### {lab['metrics']}", ""]
        lines += [f"- {md_text(m.name)}: {md_text(figure(m.estimate, m.unit))} ({m.confidence:.2f})"
                  for m in b.metrics] + [""]
    return lines


def _md_sources(sources: list[ReportSource], lab: dict) -> list[str]:
    lines = [f"## {lab['sources']}", ""]
    if not sources:
        return lines + [f"> **{lab['no_citations']}**", ""]
    for src in sources:
        title = md_text(src.title)
        shown = f"[{title}]({md_url(src.url)})" if linkable(src.url) else f"{title} ({md_text(src.url)})"
        lines.append(f"{src.noteIndex}. {shown} — {md_text(src.domain)}")
    return lines + [""]


def render_markdown_text(s: SynthesisResult, b: ModelBlueprint | None, sources: list[ReportSource],
                         meta: ReportMetadata) -> str:
    lab = labels(s.language)
    numbers = source_numbers(sources)
    lines = [f"# {md_text(s.question) or lab['title']}", "",
             f"*{lab['synthesizer']}: {md_text(s.synthesizer)} · {lab['generated']}: {meta.generatedAt} · "
             f"{lab['sources']}: {len(sources)}/{len(s.sources)}*", ""]
    lines += [f"## {lab['summary']}", ""]
    top = [s.synthesized_insights[i] for i in summary_items(s)]
    lines += [f"- {md_text(i.text)}{md_cites(i.citations, numbers, lab)}" for i in top] or [lab["nothing"]]
    lines.append("")
    lines += _md_findings(s, numbers, lab) + _md_data(s, numbers, lab) + _md_issues(s, numbers, lab)
    lines += _md_model(b, lab) + _md_sources(sources, lab)
    if meta.warnings:
        lines += [f"## {lab['warnings']}", ""] + [f"- {md_text(w)}" for w in meta.warnings] + [""]
    return "\n".join(lines).rstrip() + "\n"


# -- the report ----------------------------------------------------------------

def _outline(s: SynthesisResult, b: ModelBlueprint | None, sources: list[ReportSource]) -> list[OutlineSection]:
    lab = labels(s.language)
    sections = [OutlineSection(heading=lab["summary"],
                               bullets=[s.synthesized_insights[i].text for i in summary_items(s)])]
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
    markdown = render_markdown_text(synthesis, blueprint, sources, meta)
    report_ms = int((time.monotonic() - started) * 1000)
    meta.stepDurationsMs = {"synthesis": synthesis.duration_ms, "modeling": model_ms, "reporting": report_ms}
    meta.durationMs = synthesis.duration_ms + model_ms + report_ms
    return ResearchReport(markdown=markdown, outline=_outline(synthesis, blueprint, sources), sources=sources,
                          metadata=meta, synthesis=synthesis, model=blueprint)


def render_markdown(report: ResearchReport) -> str:
    return report.markdown


def render_json(report: ResearchReport) -> str:
    return json.dumps(report.to_contract(), ensure_ascii=False, indent=2) + "\n"


# -- the lake ---------------------------------------------------------------------

def report_keys(task_id: str, report_id: str) -> dict[str, str]:
    return {fmt: Lake.report_key(task_id, report_id, name) for fmt, name in FORMATS.items()}


def _row(task_id: str, report: ResearchReport, synthesis: SynthesisResult, keys: dict[str, str]) -> list:
    citations = synthesis.all_citations()
    meta = report.metadata
    return [task_id, datetime.fromisoformat(meta.generatedAt) if meta.generatedAt else datetime.now(timezone.utc),
            synthesis.question, synthesis.language, synthesis.synthesizer, len(synthesis.sources),
            len(report.sources), len(citations), sum(1 for c in citations if not c.verified),
            len(synthesis.synthesized_insights), len(meta.warnings), keys["md"], keys["html"], keys["json"],
            meta.durationMs, meta.tokens, current_flow_run(),
            synthesis.synthesized_insights[0].text if synthesis.synthesized_insights else None]


def citation_rows(task_id: str, report: ResearchReport) -> list[list]:
    """The `report_citations` rows of a report: every quote it holds, with
    its source's note number, where it lies in the source's stored text,
    and the section it is in (insight, data_point, contradiction, gap,
    model: a core driver's evidence)."""
    synthesis = report.synthesis
    if synthesis is None:
        return []
    numbers = source_numbers(report.sources)
    fields = {ref.source_id: ref.text_field for ref in synthesis.sources}
    sections: list[tuple[str, list]] = [
        ("insight", [i.citations for i in synthesis.synthesized_insights]),
        ("data_point", [p.citations for p in synthesis.key_data_points]),
        *((item.kind, [item.citations]) for item in synthesis.contradictions_or_gaps),
        ("model", [[d.evidence] if d.evidence else [] for d in (report.model.coreDrivers if report.model else [])]),
    ]
    rows = []
    for section, items in sections:
        for index, citations in enumerate(items):
            rows += [[task_id, numbers.get(c.source_id) if c.verified else None, c.source_id, c.url, c.title,
                      c.quote, c.start, c.end, c.verified, section, index, fields.get(c.source_id, "content_text")]
                     for c in citations]
    return rows


def store_report(catalog: Catalog, task_id: str, report: ResearchReport, synthesis: SynthesisResult,
                 blueprint: ModelBlueprint | None) -> dict[str, str]:
    """Write report.md/.json/.html under a folder of their own and record the
    task's `reports` row and `report_citations` rows in one commit: readers
    see the old report or the new one, never a mix. The previous report's
    files go once the commit is in; a failed commit takes the new files back."""
    if report.synthesis is None or report.model is None:
        # report.json should carry its evidence even if the caller built the
        # report by hand; don't mutate the caller's object.
        report = report.model_copy(update={"synthesis": report.synthesis or numbered(synthesis),
                                           "model": report.model or blueprint})
    keys = report_keys(task_id, uuid.uuid4().hex[:16])
    write = LakeWrite(catalog.lake)
    write.put(keys["md"], render_markdown(report).encode("utf-8"))
    write.put(keys["json"], render_json(report).encode("utf-8"))
    write.put(keys["html"], render_html(report).encode("utf-8"))

    citations = citation_rows(task_id, report)

    def record(cat: Catalog) -> None:
        write.deletes.clear()
        for old in cat.rows("report_paths", [task_id]):
            for key in old:
                write.delete_after_commit(key)
        cat.run("report_delete", [task_id])
        cat.run("report_insert", _row(task_id, report, report.synthesis, keys))
        cat.run("report_citation_delete", [task_id])
        for row in citations:
            cat.run("report_citation_insert", row)

    try:
        catalog.transaction(record, write, action="report", task_id=task_id,
                            detail=f"{counted(len(citations), 'citation')} of {counted(len(report.sources), 'source')}")
    except BaseException:
        for key in keys.values():
            catalog.lake.delete(key)
        raise
    refresh_exports(catalog, task_id, ("reports", "report_citations"))
    return keys


def load_report(catalog: Catalog, task_id: str, fmt: str = "md") -> str:
    """The text of a task's published report in `fmt` (md, html or json)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}: use md, html or json")
    rows = catalog.rows("report_paths", [task_id])
    if not rows:
        raise ReportNotFound(f"no report has been published for task {task_id!r}")
    key = dict(zip(("md", "html", "json"), rows[0]))[fmt]
    return catalog.lake.read_bytes(key).decode("utf-8")


# -- the whole step ---------------------------------------------------------------

@dataclass(frozen=True)
class PublishedReport:
    report: ResearchReport
    keys: dict[str, str]
    uris: dict[str, str]


def compose_report(material: SynthesisInput, *, llm: LLMConfig | None = None,
                   client: httpx.Client | None = None) -> tuple[ResearchReport, SynthesisResult, ModelBlueprint]:
    """synthesize → model → report, from material already read from the
    lake: no catalog is open while a model may be called."""
    synthesis = synthesize_material(material, llm=llm, client=client)
    blueprint = build_blueprint(synthesis, llm=llm, client=client)
    return build_report(synthesis, blueprint, task_id=material.task_id), synthesis, blueprint


def publish_report(settings: Settings, task_id: str, plan: dict | None = None, *, question: str | None = None,
                   llm: LLMConfig | None = None, client: httpx.Client | None = None,
                   source_ids: list[str] | None = None, purpose: str = "report") -> PublishedReport:
    """The report step of one consolidated task (restricted to `source_ids`
    when a governed run selected them): read its sources in one short
    catalog session, release the catalog while synthesis and modeling run
    (they may call a model), then record the report in a second session."""
    with open_catalog(settings, f"{purpose}: read sources", read_only=True) as catalog:
        material = synthesis_input(catalog, task_id, plan, question=question, source_ids=source_ids)
    report, synthesis, blueprint = compose_report(material, llm=llm, client=client)
    with open_catalog(settings, f"{purpose}: store") as catalog:
        keys = store_report(catalog, task_id, report, synthesis, blueprint)
        uris = {name: catalog.lake.uri(key) for name, key in keys.items()}
    return PublishedReport(report, keys, uris)
