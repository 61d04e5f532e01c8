"""What a watch round changed, in words: the first section of the round's
report, the Prefect artifact, and what `searchlake changes` prints."""

from __future__ import annotations

from schemas.report import ReportMetadata, ResearchReport
from schemas.watch import Change
from tasks.common.text import counted
from tasks.reporting.markdown import md_text

NAMED = 3  # sources named in the sentence before "and N more"

# The words of what changed, in the report's language (a Chinese question's watch reads Chinese).
_WORDS = {
    "en": {
        "heading": "What changed",
        "first": "Round {number} is the first of this watch: {sources} and {insights}; the next rounds say what "
                 "changed.",
        "nothing": "Round {number}: nothing changed since round {previous} — the same sources in the same order "
                   "with the same content, and the same answer.",
        "since": "Round {number}, since round {previous}: {sources}; {answer}.",
        "source_added": ("new source", "new sources"), "source_dropped": ("dropped", "dropped"),
        "source_moved": ("moved in rank", "moved in rank"),
        "content_changed": ("with changed content", "with changed content"),
        "count": "{n} {word}", "list": ", ", "same_sources": "the same sources in the same order",
        "answer_unchanged": "the answer is unchanged", "cites_now": "the answer now cites {named}",
        "cites_no_more": "no longer cites {named}", "added_removed": "{added} added, {removed} removed",
        "answer_changed": "the answer changed", "answer_list": "; ", "names": ", ", "counted": {},
        "more": " and {n} more", "more_listed": "… and {n} more (searchlake changes --topic …)",
        "kinds": {}, "unchanged_line": "answer unchanged",
    },
    "zh": {
        "heading": "变化",
        "first": "第 {number} 轮是这个监视的第一轮：{sources}，{insights}；之后每一轮会说明有什么变化。",
        "nothing": "第 {number} 轮：自第 {previous} 轮以来没有变化——来源、顺序和内容都相同，答案也相同。",
        "since": "第 {number} 轮，自第 {previous} 轮以来：{sources}；{answer}。",
        "source_added": ("个新来源", "个新来源"), "source_dropped": ("个被移除", "个被移除"),
        "source_moved": ("个排名变化", "个排名变化"), "content_changed": ("个内容有变化", "个内容有变化"),
        "count": "{n} {word}", "list": "，", "same_sources": "来源和顺序都没有变化",
        "answer_unchanged": "答案没有变化", "cites_now": "答案现在引用 {named}", "cites_no_more": "不再引用 {named}",
        "added_removed": "新增 {added}，移除 {removed} 条", "answer_changed": "答案有变化", "answer_list": "，",
        "names": "、", "counted": {"source": "{n} 个来源", "insight": "{n} 条结论", "quote": "{n} 条引文"},
        "more": " 及另外 {n} 个", "more_listed": "… 另有 {n} 项（searchlake changes --topic …）",
        "kinds": {"source_added": "新增来源", "source_dropped": "移除来源", "source_moved": "排名变化",
                  "content_changed": "内容变化", "insight_added": "新增结论", "insight_removed": "移除结论",
                  "quote_added": "新增引文", "quote_removed": "移除引文"},
        "unchanged_line": "答案未变",
    },
}


def _words(language: str) -> dict:
    return _WORDS.get(language, _WORDS["en"])


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


def summary(changes: list[Change], number: int, previous: int | None, sources: int = 0, insights: int = 0,
            language: str = "en") -> str:
    """One paragraph: what the round changed since the previous one."""
    w = _words(language)
    if previous is None:
        return w["first"].format(number=number, sources=_counted(sources, "source", w),
                                 insights=_counted(insights, "insight", w))
    kinds = {kind: [c for c in changes if c.kind == kind] for kind in {c.kind for c in changes}}
    source_parts = [part for part in (_count(kinds, kind, w) for kind in
                                      ("source_added", "source_dropped", "source_moved", "content_changed")) if part]
    if not source_parts and "answer_unchanged" in kinds:
        return w["nothing"].format(number=number, previous=previous)
    sources_words = w["list"].join(source_parts) if source_parts else w["same_sources"]
    return w["since"].format(number=number, previous=previous, sources=sources_words,
                             answer=_answer_words(kinds, w))


def _counted(number: int, noun: str, w: dict) -> str:
    return w["counted"][noun].format(n=number) if w["counted"] else counted(number, noun)


def _count(kinds: dict, kind: str, w: dict) -> str:
    found = len(kinds.get(kind, []))
    one, many = w[kind]
    return w["count"].format(n=found, word=one if found == 1 else many) if found else ""


def _answer_words(kinds: dict, w: dict) -> str:
    if "answer_unchanged" in kinds:
        return w["answer_unchanged"]
    parts = []
    # sources by their URL; named by their title
    before = {c.url for c in kinds.get("quote_removed", [])}
    now = {c.url for c in kinds.get("quote_added", [])}
    added = _titles([c for c in kinds.get("quote_added", []) if c.url not in before])
    removed = _titles([c for c in kinds.get("quote_removed", []) if c.url not in now])
    if added:
        parts.append(w["cites_now"].format(named=_named(added, w)))
    if removed:
        parts.append(w["cites_no_more"].format(named=_named(removed, w)))
    insights_added, insights_removed = len(kinds.get("insight_added", [])), len(kinds.get("insight_removed", []))
    if insights_added or insights_removed:
        parts.append(w["added_removed"].format(added=_counted(insights_added, "insight", w), removed=insights_removed))
    quotes_added, quotes_removed = len(kinds.get("quote_added", [])), len(kinds.get("quote_removed", []))
    if not added and not removed:
        parts.append(w["added_removed"].format(added=_counted(quotes_added, "quote", w), removed=quotes_removed))
    return w["answer_list"].join(parts) if parts else w["answer_changed"]


def _titles(changes: list[Change]) -> list[str]:
    seen: list[str] = []
    for change in changes:
        title = " ".join((change.title or change.url or "?").split())
        if title not in seen:
            seen.append(title)
    return seen


def _named(titles: list[str], w: dict) -> str:
    shown = w["names"].join(f"“{t}”" for t in titles[:NAMED])
    return shown + (w["more"].format(n=len(titles) - NAMED) if len(titles) > NAMED else "")


def change_line(change: Change, language: str = "en") -> str:
    """One change, short: '+ source #2 Title', 'moved #4→#2 Title'."""
    w = _words(language)
    what = change.title or change.url or ""
    ranks = {"source_added": f"#{change.new_rank}", "source_dropped": f"#{change.old_rank}",
             "source_moved": f"#{change.old_rank}→#{change.new_rank}",
             "content_changed": f"#{change.new_rank}"}.get(change.kind, "")
    if change.kind in ("insight_added", "insight_removed", "quote_added", "quote_removed"):
        what = f"“{' '.join((change.detail or '').split())}” ({what})"
    if change.kind == "answer_unchanged":
        return w["unchanged_line"]
    kind = w["kinds"].get(change.kind, change.kind.replace("_", " "))
    return " ".join(part for part in (kind, ranks, what) if part)


def changes_markdown(sentence: str, changes: list[Change], limit: int = 30, language: str = "en") -> list[str]:
    """The report's first section: the sentence, then the changes one a line."""
    w = _words(language)
    lines = [f"## {w['heading']}", "", md_text(sentence), ""]
    listed = [c for c in changes if c.kind != "answer_unchanged"]
    lines += [f"- {md_text(change_line(c, language))}" for c in listed[:limit]]
    if len(listed) > limit:
        lines.append(f"- {w['more_listed'].format(n=len(listed) - limit)}")
    return lines + ([""] if listed else [])


def report_language(report: ResearchReport) -> str:
    return report.synthesis.language if report.synthesis is not None else "en"


def with_changes(report: ResearchReport, sentence: str, changes: list[Change]) -> ResearchReport:
    """The report with what changed as its first section (in the Markdown,
    and as `watchChanges` in its metadata, which the HTML shows first), in
    the report's language."""
    language = report_language(report)
    section = changes_markdown(sentence, changes, language=language)
    lines = report.markdown.splitlines()
    # the title and the line under it stay first
    head = 4 if len(lines) >= 4 and lines[0].startswith("# ") else 0
    markdown = "\n".join(lines[:head] + section + lines[head:]).rstrip() + "\n"
    told = {"heading": _words(language)["heading"], "summary": sentence,
            "changes": [change_line(c, language) for c in changes if c.kind != "answer_unchanged"]}
    metadata = ReportMetadata.model_validate({**report.metadata.model_dump(), "watchChanges": told})
    return report.model_copy(update={"markdown": markdown, "metadata": metadata})
