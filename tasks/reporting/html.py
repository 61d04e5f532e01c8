"""report.html: a ResearchReport as one self-contained page (inline CSS, no
scripts, no external assets), so it opens anywhere, offline, as a file.

Source titles, quotes and URLs come from the web and are untrusted: every
piece of text is HTML-escaped, a Content-Security-Policy forbids scripts
even if something slipped through, and only http(s)/file URLs become links.
Each citation is labelled by its source's domain and links to the source;
a report with no citations says so in a marker (#no-citations).
"""

from __future__ import annotations

import html
from schemas.report import Citation, ModelBlueprint, ReportSource, ResearchReport, SynthesisResult
from tasks.synthesis.labels import labels
from tasks.reporting.layout import (
    dimension_groups,
    displayed,
    figure,
    linkable,
    source_numbers,
    answer_groups,
    caution,
    unique_citations,
    unverified_count,
)

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
p.caution { border-left: 3px solid var(--line); padding-left: .6rem; color: var(--muted); }
sup.cite { font-size: .72rem; margin-left: .15rem; white-space: nowrap; }
a.citation { color: var(--accent); text-decoration: none; border: 1px solid var(--line); border-radius: .6rem;
             padding: 0 .35rem; background: var(--soft); }
a.citation:hover, a.citation:focus { text-decoration: underline; }
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


def html_cite(citation: Citation, note: int) -> str:
    """A superscript citation labelled by the source's domain, linking to the
    source, its verified quote as the tooltip."""
    tip = f"[{note}] {citation.title}" + (f" — “{' '.join(citation.quote.split())}”" if citation.quote else "")
    attrs = (f'class="citation" data-note="{note}" data-source-id="{_e(citation.source_id)}" '
             f'title="{_e(tip)}"')
    label = _e(citation.domain or citation.url)
    inner = (f'<a {attrs} href="{_e(citation.url)}" target="_blank" rel="noopener noreferrer">{label}</a>'
             if linkable(citation.url) else f"<span {attrs}>{label}</span>")
    return f'<sup class="cite">{inner}</sup>'


def html_cites(citations: list[Citation], numbers: dict[str, int], lab: dict) -> str:
    """The item's evidence; a quote not found in its source is not shown,
    only marked (it is no evidence)."""
    marks = "".join(html_cite(c, numbers[c.source_id]) for c in unique_citations(citations))
    if unverified_count(citations):
        marks += f'<span class="unverified-mark" data-verified="false">({_e(lab["unverified"])})</span>'
    return marks


def _html_findings(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> str:
    parts = [f"<h2>{_e(lab['findings'])}</h2>"]
    if not s.synthesized_insights:
        return parts[0] + f'<p class="empty">{_e(lab["nothing"])}</p>'
    for dimension, indices in dimension_groups(s).items():
        items = "".join(
            f'<li class="insight" data-citability="{x.citability}">{_e(x.text)}{html_cites(x.citations, numbers, lab)}</li>'
            for x in (s.synthesized_insights[i] for i in indices))
        parts.append(f'<h3>{_e(dimension or lab["general"])}</h3><ul class="items">{items}</ul>')
    return "".join(parts)


def _html_answer(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> str:
    parts = []
    for label, points in answer_groups(s):
        items = "".join(f'<li class="answer-point">{_e(x.text)}{html_cites(x.citations, numbers, lab)}</li>'
                        for x in points)
        parts.append((f'<h3>{_e(label)}</h3>' if label else "") + f'<ul class="items">{items}</ul>')
    body = "".join(parts) or f'<p class="empty">{_e(lab["nothing"])}</p>'
    warned = f'<p class="caution">{_e(said)}</p>' if (said := caution(s)) else ""
    return f"<h2>{_e(lab['answer'])}</h2>{warned}{body}"


def _html_data(s: SynthesisResult, numbers: dict[str, int], lab: dict) -> str:
    if not s.key_data_points:
        return ""
    rows = "".join(f"<tr><td>{_e(figure(p.value, p.unit))}</td><td>{_e(p.measure)}</td>"
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
        items = "".join(f"<li>{_e(m.name)}: {_e(figure(m.estimate, m.unit))} ({m.confidence:.2f})</li>" for m in b.metrics)
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


def _html_changes(meta) -> str:
    """A watch round's report opens with what changed since the previous round."""
    told = (meta.model_extra or {}).get("watchChanges")
    if not isinstance(told, dict):
        return ""
    items = "".join(f"<li>{_e(str(line))}</li>" for line in told.get("changes", []))
    heading, sentence = _e(str(told.get("heading", ""))), _e(str(told.get("summary", "")))
    return (f'<section id="changes"><h2>{heading}</h2><p>{sentence}</p>' + (f"<ul>{items}</ul>" if items else "")
            + "</section>")


def render_html(report: ResearchReport) -> str:
    """A self-contained page: inline CSS, no scripts, no external assets."""
    report = displayed(report)
    s = report.synthesis or SynthesisResult(question=report.metadata.question, language=report.metadata.language)
    lab = labels(s.language)
    numbers = source_numbers(report.sources)
    meta = report.metadata
    title = s.question or lab["title"]
    warnings = "".join(f"<li>{_e(w)}</li>" for w in meta.warnings)
    body = (
        f'<header><h1 id="report-title">{_e(title)}</h1>'
        f'<p class="meta">{_e(lab["synthesizer"])}: {_e(meta.synthesizer)} · {_e(lab["generated"])}: '
        f'{_e(meta.generatedAt)} · {_e(lab["sources"])}: {len(report.sources)}/{meta.sourceCount}</p></header>'
        f"{_html_changes(meta)}"
        f'<section id="answer">{_html_answer(s, numbers, lab)}</section>'
        f'<section id="evidence">{_html_findings(s, numbers, lab)}</section>'
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
