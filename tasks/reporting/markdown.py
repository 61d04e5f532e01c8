"""The Markdown of a report (report.md). Source titles, quotes and URLs
come from the web and are untrusted: Markdown escapes its special
characters, and only http(s)/file URLs ever become links."""

from __future__ import annotations

import re

from schemas.report import Citation, ModelBlueprint, ReportMetadata, ReportSource, SynthesisResult
from tasks.common.text import printable
from tasks.reporting.layout import (
    dimension_groups,
    figure,
    linkable,
    source_numbers,
    answer_groups,
    caution,
    unique_citations,
    unverified_count,
)
from tasks.synthesis.labels import labels


_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>|#!~"})
# What a GitHub-flavoured renderer (Prefect's UI) turns into a link by
# itself: a bare scheme://, www. or address@host. A backslash before the
# colon, the dot or the @ keeps the text as it reads and forms no link.
_AUTOLINK = re.compile(r"(?<=[A-Za-z0-9]):(?=//)|(?<=(?<![A-Za-z0-9])[Ww]{3})\.|@")


def md_text(text: str) -> str:
    """Untrusted text made inert in Markdown: one line, no control or
    bidirectional characters, specials escaped, so that no renderer forms
    an image, a link or HTML of it (a title like <script> or
    ![x](http://…/p.png) stays text)."""
    line = " ".join(printable(text or "").split()).translate(_MD_SPECIAL)
    return _AUTOLINK.sub(lambda found: "\\" + found.group(), line)


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
    lines += [f"## {lab['answer']}", ""]
    if said := caution(s):
        lines += [f"*{md_text(said)}*", ""]
    groups = answer_groups(s)
    for label, points in groups:
        if label:
            lines += [f"**{md_text(label)}**", ""]
        lines += [f"- {md_text(p.text)}{md_cites(p.citations, numbers, lab)}" for p in points] + [""]
    if not groups:
        lines += [lab["nothing"], ""]
    lines += _md_findings(s, numbers, lab) + _md_data(s, numbers, lab) + _md_issues(s, numbers, lab)
    lines += _md_model(b, lab) + _md_sources(sources, lab)
    if meta.warnings:
        lines += [f"## {lab['warnings']}", ""] + [f"- {md_text(w)}" for w in meta.warnings] + [""]
    return "\n".join(lines).rstrip() + "\n"
