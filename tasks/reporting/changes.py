"""What a watch round changed, in words: the first section of the round's
report, the Prefect artifact, and what `searchlake changes` prints."""

from __future__ import annotations

from schemas.report import ReportMetadata, ResearchReport
from schemas.watch import Change
from tasks.common.text import counted
from tasks.reporting.markdown import md_text

HEADING = "What changed"
NAMED = 3  # sources named in the sentence before "and N more"


def answer_rows(report: ResearchReport) -> list[list]:
    """The report's answer as a round keeps it: one row per quote (section,
    item_index, insight, source_id, url, title, quote, verified), with the
    text of the insight it backs; an insight citing nothing is one row
    without a source."""
    synthesis = report.synthesis
    if synthesis is None:
        return []
    rows: list[list] = []
    for index, insight in enumerate(synthesis.synthesized_insights):
        rows += [["insight", index, insight.text, c.source_id, c.url, c.title, c.quote, c.verified]
                 for c in insight.citations] or [["insight", index, insight.text, None, None, None, None, None]]
    for section, items in (("data_point", synthesis.key_data_points), ("issue", synthesis.contradictions_or_gaps)):
        for index, item in enumerate(items):
            rows += [[section, index, None, c.source_id, c.url, c.title, c.quote, c.verified] for c in item.citations]
    return rows


def summary(changes: list[Change], number: int, previous: int | None, sources: int = 0, insights: int = 0) -> str:
    """One paragraph: what the round changed since the previous one."""
    if previous is None:
        return (f"Round {number} is the first of this watch: {counted(sources, 'source')} and "
                f"{counted(insights, 'insight')}; the next rounds say what changed.")
    kinds = {kind: [c for c in changes if c.kind == kind] for kind in {c.kind for c in changes}}
    source_parts = [part for part in (
        _count(kinds, "source_added", "new source", "new sources"),
        _count(kinds, "source_dropped", "dropped", "dropped"),
        _count(kinds, "source_moved", "moved in rank", "moved in rank"),
        _count(kinds, "content_changed", "with changed content", "with changed content"),
    ) if part]
    answer = _answer_words(kinds)
    if not source_parts and "answer_unchanged" in kinds:
        return (f"Round {number}: nothing changed since round {previous} — the same sources in the same order "
                "with the same content, and the same answer.")
    sources_words = ", ".join(source_parts) if source_parts else "the same sources in the same order"
    return f"Round {number}, since round {previous}: {sources_words}; {answer}."


def _count(kinds: dict, kind: str, one: str, many: str) -> str:
    found = len(kinds.get(kind, []))
    return f"{found} {one if found == 1 else many}" if found else ""


def _answer_words(kinds: dict) -> str:
    if "answer_unchanged" in kinds:
        return "the answer is unchanged"
    parts = []
    # sources by their URL; named by their title
    before = {c.url for c in kinds.get("quote_removed", [])}
    now = {c.url for c in kinds.get("quote_added", [])}
    added = _titles([c for c in kinds.get("quote_added", []) if c.url not in before])
    removed = _titles([c for c in kinds.get("quote_removed", []) if c.url not in now])
    if added:
        parts.append(f"the answer now cites {_named(added)}")
    if removed:
        parts.append(f"no longer cites {_named(removed)}")
    insights_added, insights_removed = len(kinds.get("insight_added", [])), len(kinds.get("insight_removed", []))
    if insights_added or insights_removed:
        parts.append(f"{counted(insights_added, 'insight')} added, {insights_removed} removed")
    quotes_added, quotes_removed = len(kinds.get("quote_added", [])), len(kinds.get("quote_removed", []))
    if not added and not removed:
        parts.append(f"{counted(quotes_added, 'quote')} added, {quotes_removed} removed")
    return "; ".join(parts) if parts else "the answer changed"


def _titles(changes: list[Change]) -> list[str]:
    seen: list[str] = []
    for change in changes:
        title = " ".join((change.title or change.url or "?").split())
        if title not in seen:
            seen.append(title)
    return seen


def _named(titles: list[str]) -> str:
    shown = ", ".join(f"“{t}”" for t in titles[:NAMED])
    return shown + (f" and {len(titles) - NAMED} more" if len(titles) > NAMED else "")


def change_line(change: Change) -> str:
    """One change, short: '+ source #2 Title', 'moved #4→#2 Title'."""
    what = change.title or change.url or ""
    ranks = {"source_added": f"#{change.new_rank}", "source_dropped": f"#{change.old_rank}",
             "source_moved": f"#{change.old_rank}→#{change.new_rank}",
             "content_changed": f"#{change.new_rank}"}.get(change.kind, "")
    if change.kind in ("insight_added", "insight_removed", "quote_added", "quote_removed"):
        what = f"“{' '.join((change.detail or '').split())}” ({what})"
    if change.kind == "answer_unchanged":
        return "answer unchanged"
    return " ".join(part for part in (change.kind.replace("_", " "), ranks, what) if part)


def changes_markdown(sentence: str, changes: list[Change], limit: int = 30) -> list[str]:
    """The report's first section: the sentence, then the changes one a line."""
    lines = [f"## {HEADING}", "", md_text(sentence), ""]
    listed = [c for c in changes if c.kind != "answer_unchanged"]
    lines += [f"- {md_text(change_line(c))}" for c in listed[:limit]]
    if len(listed) > limit:
        lines.append(f"- … and {len(listed) - limit} more (searchlake changes --topic …)")
    return lines + ([""] if listed else [])


def with_changes(report: ResearchReport, sentence: str, changes: list[Change]) -> ResearchReport:
    """The report with what changed as its first section (in the Markdown,
    and as `watchChanges` in its metadata, which the HTML shows first)."""
    section = changes_markdown(sentence, changes)
    lines = report.markdown.splitlines()
    # the title and the line under it stay first
    head = 4 if len(lines) >= 4 and lines[0].startswith("# ") else 0
    markdown = "\n".join(lines[:head] + section + lines[head:]).rstrip() + "\n"
    told = {"heading": HEADING, "summary": sentence,
            "changes": [change_line(c) for c in changes if c.kind != "answer_unchanged"]}
    metadata = ReportMetadata.model_validate({**report.metadata.model_dump(), "watchChanges": told})
    return report.model_copy(update={"markdown": markdown, "metadata": metadata})
