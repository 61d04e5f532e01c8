"""Reporting (spec 002's ReportAgent): synthesis + blueprint → ResearchReport,
rendered as report.md, report.json and a self-contained report.html, and
published to the lake together with a `reports` catalog row.

Citations are numbered per cited source, in order of first appearance
([1], [2], …); `sources[].noteIndex` is that number. Source titles, quotes
and URLs come from the web and are untrusted: Markdown escapes its special
characters, HTML escapes everything and forbids scripts with a
Content-Security-Policy, and only http(s)/file URLs ever become links.
"""

from __future__ import annotations

import html
import json
import time
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
from schemas.urls import url_scheme
from tasks.catalog import Catalog
from tasks.consolidation import UnknownTask
from tasks.lake import Lake, LakeWrite
from tasks.llm import LLMConfig
from tasks.modeling import build_blueprint
from tasks.synthesis import labels, synthesize_task

FORMATS = {"md": "report.md", "html": "report.html", "json": "report.json"}
LINK_SCHEMES = frozenset({"http", "https", "file"})


class ReportNotFound(UnknownTask):
    """No report has been published for the task. (An UnknownTask, so the
    CLI's existing handler prints it as a one-line error.)"""


# -- numbering -----------------------------------------------------------------

def note_numbers(synthesis: SynthesisResult) -> dict[str, int]:
    """source_id → note number, in the order a reader meets the citations
    (summary, findings by dimension, data points, contradictions and gaps)."""
    numbers: dict[str, int] = {}
    insights = [*summary_items(synthesis), *(i for g in _dimension_groups(synthesis).values() for i in g)]
    items = [*(synthesis.synthesized_insights[i] for i in insights), *synthesis.key_data_points,
             *synthesis.contradictions_or_gaps]
    for item in items:
        for citation in _unique(item.citations):
            numbers.setdefault(citation.source_id, len(numbers) + 1)
    return numbers


def _unique(citations: Iterable[Citation]) -> list[Citation]:
    """One citation per source in an item (the first, i.e. the lead quote)."""
    seen: set[str] = set()
    out = []
    for c in citations:
        if c.source_id not in seen:
            seen.add(c.source_id)
            out.append(c)
    return out


def report_sources(synthesis: SynthesisResult, numbers: dict[str, int]) -> list[ReportSource]:
    first = {}
    for c in synthesis.all_citations():
        first.setdefault(c.source_id, c)
    return [ReportSource(title=first[sid].title or first[sid].url, url=first[sid].url, noteIndex=n,
                         domain=first[sid].domain, sourceId=sid)
            for sid, n in sorted(numbers.items(), key=lambda kv: kv[1])]


def linkable(url: str) -> bool:
    return url_scheme(url) in LINK_SCHEMES


# -- Markdown ------------------------------------------------------------------

_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>|#"})


def md_text(text: str) -> str:
    """Untrusted text made inert in Markdown: one line, specials escaped (a
    title like <script> stays text in any renderer)."""
    return " ".join((text or "").split()).translate(_MD_SPECIAL)


def md_url(url: str) -> str:
    return "".join({" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E"}.get(ch, ch) for ch in url.strip())


def md_cites(citations: Iterable[Citation], numbers: dict[str, int]) -> str:
    marks = []
    for c in _unique(citations):
        label = f"{numbers[c.source_id]}{'' if c.verified else '?'}"
        marks.append(f"[\\[{label}\\]]({md_url(c.url)})" if linkable(c.url) else f"\\[{label}\\]")
    return (" " + " ".join(marks)) if marks else ""


def _dimension_groups(synthesis: SynthesisResult) -> dict[str | None, list[int]]:
    groups: dict[str | None, list[int]] = {}
    for i, insight in enumerate(synthesis.synthesized_insights):
        groups.setdefault(insight.dimension, []).append(i)
    return groups


def summary_items(s: SynthesisResult, limit: int = 3) -> list[int]:
    """The best insight of each dimension first (each group is in rank
    order), then the next best: a summary that spans the topic."""
    groups = list(_dimension_groups(s).values())
    order = [i for depth in range(max(map(len, groups), default=0)) for g in groups if depth < len(g)
             for i in [g[depth]]]
    return order[:limit]


def _figure(value: float, unit: str) -> str:
    return f"{value:g}{unit}" if unit in ("%", "x") or not unit.isascii() else f"{value:g} {unit}".strip()


def _md_findings(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> list[str]:
    lines = [f"## {lab['findings']}", ""]
    if not s.synthesized_insights:
        return lines + [lab["nothing"], ""]
    for dimension, indices in _dimension_groups(s).items():
        lines += [f"### {md_text(dimension) if dimension else lab['general']}", ""]
        lines += [f"- {md_text(s.synthesized_insights[i].text)}{md_cites(s.synthesized_insights[i].citations, numbers)}"
                  for i in indices]
        lines.append("")
    return lines


def _md_data(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> list[str]:
    if not s.key_data_points:
        return []
    lines = [f"## {lab['data']}", "", f"| {lab['value']} | {lab['measure']} | {lab['cited']} |", "| --- | --- | --- |"]
    lines += [f"| {md_text(_figure(p.value, p.unit))} | {md_text(p.measure)} |{md_cites(p.citations, numbers)} |"
              for p in s.key_data_points]
    return lines + [""]


def _md_issues(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> list[str]:
    if not s.contradictions_or_gaps:
        return []
    lines = [f"## {lab['issues']}", ""]
    for item in s.contradictions_or_gaps:
        kind = lab["contradiction_kind" if item.kind == "contradiction" else "gap_kind"]
        lines.append(f"- **{kind}**: {md_text(item.description)}{md_cites(item.citations, numbers)}")
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
        lines += [f"- {md_text(m.name)}: {md_text(_figure(m.estimate, m.unit))} ({m.confidence:.2f})"
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
    numbers = {src.sourceId: src.noteIndex for src in sources if src.sourceId}
    lines = [f"# {md_text(s.question) or lab['title']}", "",
             f"*{lab['synthesizer']}: {md_text(s.synthesizer)} · {lab['generated']}: {meta.generatedAt} · "
             f"{lab['sources']}: {len(sources)}/{len(s.sources)}*", ""]
    lines += [f"## {lab['summary']}", ""]
    top = [s.synthesized_insights[i] for i in summary_items(s)]
    lines += [f"- {md_text(i.text)}{md_cites(i.citations, numbers)}" for i in top] or [lab["nothing"]]
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
    for dimension, indices in _dimension_groups(s).items():
        sections.append(OutlineSection(heading=f"{lab['findings']}: {dimension or lab['general']}",
                                       bullets=[s.synthesized_insights[i].text for i in indices]))
    if s.key_data_points:
        sections.append(OutlineSection(heading=lab["data"], bullets=[
            f"{p.measure}: {_figure(p.value, p.unit)}" for p in s.key_data_points]))
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
    numbers = note_numbers(synthesis)
    sources = report_sources(synthesis, numbers)
    citations = synthesis.all_citations()
    model_ms = blueprint.metadata.durationMs if blueprint else 0
    meta = ReportMetadata(
        taskId=task_id or synthesis.task_id, question=synthesis.question, language=synthesis.language,
        synthesizer=synthesis.synthesizer,
        generatedAt=(generated_at or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        sourceCount=len(synthesis.sources), citationCount=len(citations),
        unverifiedCount=sum(1 for c in citations if not c.verified),
        insightCount=len(synthesis.synthesized_insights), noCitations=not citations,
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


# -- HTML ------------------------------------------------------------------------

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'")
CSS = """
:root { color-scheme: light dark; --fg: #1d232b; --muted: #5b6573; --line: #d9dee5; --accent: #0b5cad;
        --bg: #ffffff; --soft: #f4f6f9; --warn: #8a5a00; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ee; --muted: #9aa5b4; --line: #37404c;
        --accent: #7db4ff; --bg: #15191f; --soft: #1d232b; --warn: #f0c060; } }
body { margin: 0; background: var(--bg); color: var(--fg);
       font: 16px/1.6 system-ui, -apple-system, "Segoe UI", "PingFang SC", "Noto Sans CJK SC", sans-serif; }
main { max-width: 52rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
h1 { font-size: 1.7rem; line-height: 1.3; margin: 0 0 .4rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .6rem; padding-bottom: .2rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
.meta { color: var(--muted); font-size: .9rem; margin: 0; }
ul.items { padding-left: 1.2rem; } ul.items li { margin: .35rem 0; }
sup.cite { font-size: .72rem; margin-left: .15rem; white-space: nowrap; }
a.citation { color: var(--accent); text-decoration: none; border: 1px solid var(--line); border-radius: .6rem;
             padding: 0 .35rem; background: var(--soft); }
a.citation:hover, a.citation:focus { text-decoration: underline; }
.citation.unverified { border-style: dashed; }
.unverified-mark { color: var(--warn); margin-left: .1rem; }
.kind { font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: .95rem; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left; vertical-align: top; }
ol.sources li { margin: .3rem 0; } .domain { color: var(--muted); font-size: .85rem; margin-left: .4rem; }
#no-citations { border: 2px solid var(--warn); color: var(--warn); background: var(--soft); border-radius: .4rem;
                padding: .7rem 1rem; font-weight: 600; margin: 1rem 0; }
.warnings li { color: var(--warn); font-size: .9rem; }
"""


def _e(text: str | None) -> str:
    return html.escape(text or "", quote=True)


def html_cite(citation: Citation, note: int, lab: dict) -> str:
    """A superscript citation labelled by the source's domain, linking to the
    source; an unverified quote is marked."""
    tip = f"[{note}] {citation.title}" + (f" — “{citation.quote}”" if citation.quote else "")
    attrs = (f'class="citation{"" if citation.verified else " unverified"}" data-note="{note}" '
             f'data-source-id="{_e(citation.source_id)}" data-verified="{str(citation.verified).lower()}" '
             f'title="{_e(tip)}"')
    label = _e(citation.domain or citation.url)
    inner = (f'<a {attrs} href="{_e(citation.url)}" target="_blank" rel="noopener noreferrer">{label}</a>'
             if linkable(citation.url) else f"<span {attrs}>{label}</span>")
    mark = "" if citation.verified else f'<span class="unverified-mark" title="{_e(lab["unverified"])}">?</span>'
    return f'<sup class="cite">{inner}{mark}</sup>'


def html_cites(citations: Iterable[Citation], numbers: dict[str, int], lab: dict) -> str:
    return "".join(html_cite(c, numbers[c.source_id], lab) for c in _unique(citations))


def _html_findings(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> str:
    parts = [f"<h2>{_e(lab['findings'])}</h2>"]
    if not s.synthesized_insights:
        return parts[0] + f'<p class="empty">{_e(lab["nothing"])}</p>'
    for dimension, indices in _dimension_groups(s).items():
        items = "".join(
            f'<li class="insight" data-citability="{x.citability}">{_e(x.text)}{html_cites(x.citations, numbers, lab)}</li>'
            for x in (s.synthesized_insights[i] for i in indices))
        parts.append(f'<h3>{_e(dimension or lab["general"])}</h3><ul class="items">{items}</ul>')
    return "".join(parts)


def _html_summary(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> str:
    items = "".join(f'<li class="insight">{_e(x.text)}{html_cites(x.citations, numbers, lab)}</li>'
                    for x in (s.synthesized_insights[i] for i in summary_items(s)))
    body = f'<ul class="items">{items}</ul>' if items else f'<p class="empty">{_e(lab["nothing"])}</p>'
    return f"<h2>{_e(lab['summary'])}</h2>{body}"


def _html_data(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> str:
    if not s.key_data_points:
        return ""
    rows = "".join(f"<tr><td>{_e(_figure(p.value, p.unit))}</td><td>{_e(p.measure)}</td>"
                   f"<td>{html_cites(p.citations, numbers, lab)}</td></tr>" for p in s.key_data_points)
    head = f"<tr><th>{_e(lab['value'])}</th><th>{_e(lab['measure'])}</th><th>{_e(lab['cited'])}</th></tr>"
    return f'<section id="data-points"><h2>{_e(lab["data"])}</h2><table><thead>{head}</thead><tbody>{rows}</tbody></table></section>'


def _html_issues(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> str:
    if not s.contradictions_or_gaps:
        return ""
    items = "".join(
        f'<li class="{item.kind}"><span class="kind">{_e(lab[item.kind + "_kind"])}</span>: '
        f"{_e(item.description)}{html_cites(item.citations, numbers, lab)}</li>"
        for item in s.contradictions_or_gaps)
    return f'<section id="issues"><h2>{_e(lab["issues"])}</h2><ul class="items">{items}</ul></section>'


def _html_model(b: ModelBlueprint | None, lab: dict) -> str:
    if b is None or not (b.coreDrivers or b.metrics or b.scenarios):
        return ""
    parts = [f'<section id="model"><h2>{_e(lab["model"])}</h2>']
    if b.coreDrivers:
        items = "".join(f"<li><strong>{_e(d.name)}</strong>: {_e(d.description)}</li>" for d in b.coreDrivers)
        parts.append(f'<h3>{_e(lab["drivers"])}</h3><ul class="items">{items}</ul>')
    if b.relationships:
        items = "".join(f"<li>{_e(r.from_)} → {_e(r.to)} ({_e(r.type)}, {r.confidence:.2f})</li>" for r in b.relationships)
        parts.append(f'<h3>{_e(lab["relationships"])}</h3><ul class="items">{items}</ul>')
    if b.scenarios:
        items = "".join(f"<li><strong>{_e(x.name)}</strong> ({x.confidence:.2f}): {_e('; '.join(x.outcomes))}</li>"
                        for x in b.scenarios)
        parts.append(f'<h3>{_e(lab["scenarios"])}</h3><ul class="items">{items}</ul>')
    if b.metrics:
        items = "".join(f"<li>{_e(m.name)}: {_e(_figure(m.estimate, m.unit))} ({m.confidence:.2f})</li>" for m in b.metrics)
        parts.append(f'<h3>{_e(lab["metrics"])}</h3><ul class="items">{items}</ul>')
    return "".join(parts) + "</section>"


def _html_sources(sources: list[ReportSource], lab: dict) -> str:
    if not sources:
        return (f'<section id="sources"><h2>{_e(lab["sources"])}</h2>'
                f'<p id="no-citations" class="no-citations" role="status">{_e(lab["no_citations"])}</p></section>')
    items = []
    for src in sources:
        title = (f'<a class="source-link" href="{_e(src.url)}" target="_blank" rel="noopener noreferrer">{_e(src.title)}</a>'
                 if linkable(src.url) else f'<span class="source-link">{_e(src.title)}</span>')
        items.append(f'<li id="source-{src.noteIndex}" value="{src.noteIndex}">{title}'
                     f'<span class="domain">{_e(src.domain)}</span></li>')
    return f'<section id="sources"><h2>{_e(lab["sources"])}</h2><ol class="sources">{"".join(items)}</ol></section>'


def render_html(report: ResearchReport) -> str:
    """A self-contained page: inline CSS, no scripts, no external assets."""
    s = report.synthesis or SynthesisResult(question=report.metadata.question, language=report.metadata.language)
    lab = labels(s.language)
    numbers = {src.sourceId: src.noteIndex for src in report.sources if src.sourceId}
    meta = report.metadata
    title = s.question or lab["title"]
    warnings = "".join(f"<li>{_e(w)}</li>" for w in meta.warnings)
    body = (
        f'<header><h1 id="report-title">{_e(title)}</h1>'
        f'<p class="meta">{_e(lab["synthesizer"])}: {_e(meta.synthesizer)} · {_e(lab["generated"])}: '
        f'{_e(meta.generatedAt)} · {_e(lab["sources"])}: {len(report.sources)}/{meta.sourceCount}</p></header>'
        f'<section id="answer">{_html_summary(s, numbers, lab)}{_html_findings(s, numbers, lab)}</section>'
        f"{_html_data(s, numbers, lab)}{_html_issues(s, numbers, lab)}{_html_model(report.model, lab)}"
        f"{_html_sources(report.sources, lab)}"
        + (f'<section id="warnings" class="warnings"><h2>{_e(lab["warnings"])}</h2><ul>{warnings}</ul></section>'
           if warnings else "")
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{"zh-CN" if s.language == "zh" else "en"}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f'<meta name="referrer" content="no-referrer">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n"
        f'<body>\n<main id="report" class="report">{body}</main>\n</body>\n</html>\n'
    )


# -- the lake ---------------------------------------------------------------------

def report_keys(task_id: str) -> dict[str, str]:
    return {fmt: Lake.report_key(task_id, name) for fmt, name in FORMATS.items()}


def _row(task_id: str, report: ResearchReport, synthesis: SynthesisResult, keys: dict[str, str]) -> list:
    citations = synthesis.all_citations()
    meta = report.metadata
    return [task_id, datetime.fromisoformat(meta.generatedAt) if meta.generatedAt else datetime.now(timezone.utc),
            synthesis.question, synthesis.language, synthesis.synthesizer, len(synthesis.sources),
            len(report.sources), len(citations), sum(1 for c in citations if not c.verified),
            len(synthesis.synthesized_insights), len(meta.warnings), keys["md"], keys["html"], keys["json"],
            meta.durationMs, meta.tokens]


def publish_report(catalog: Catalog, task_id: str, report: ResearchReport, synthesis: SynthesisResult,
                   blueprint: ModelBlueprint | None) -> dict[str, str]:
    """Stage report.md/.json/.html and record the task's `reports` row in one
    commit: readers see the old report or the new one, never a mix."""
    if report.synthesis is None or report.model is None:
        # report.json should carry its evidence even if the caller built the
        # report by hand; don't mutate the caller's object.
        report = report.model_copy(update={"synthesis": report.synthesis or synthesis,
                                           "model": report.model or blueprint})
    keys = report_keys(task_id)
    write = LakeWrite(catalog.lake)
    write.stage_bytes(keys["md"], render_markdown(report).encode("utf-8"))
    write.stage_bytes(keys["json"], render_json(report).encode("utf-8"))
    write.stage_bytes(keys["html"], render_html(report).encode("utf-8"))

    def record(cat: Catalog) -> None:
        cat.run("report_delete", [task_id])
        cat.run("report_insert", _row(task_id, report, synthesis, keys))

    catalog.commit_write(write, record)
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


def report_task(catalog: Catalog, task_id: str, plan: dict | None = None, *, question: str | None = None,
                llm: LLMConfig | None = None, client: httpx.Client | None = None,
                source_ids: list[str] | None = None) -> PublishedReport:
    """synthesize → model → report → publish, for one consolidated task
    (restricted to `source_ids` when a governed run selected them)."""
    synthesis = synthesize_task(catalog, task_id, plan, question=question, llm=llm, client=client,
                                source_ids=source_ids)
    blueprint = build_blueprint(synthesis, llm=llm, client=client)
    report = build_report(synthesis, blueprint, task_id=task_id)
    return PublishedReport(report, publish_report(catalog, task_id, report, synthesis, blueprint))
