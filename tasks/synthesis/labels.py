"""The report's language and the words it is written in, shared by
synthesis, modeling and reports."""

from __future__ import annotations

from tasks.common.text import has_han

LABELS: dict[str, dict[str, str]] = {
    "en": {
        "no_sources": "No sources were found for this task, so there is no evidence to synthesize.",
        "gap_dimension": "No evidence was found for “{dimension}”.",
        "gap_part": "The sources do not answer this part of the question: “{part}”.",
        "gap_part_touched": "The sources may not answer this part of the question: “{part}” — passages touch on "
                            "it, but none speaks to it clearly.",
        "says_one": "{domain} reports: “{quote}”",
        "says_many": "{domain} and {others} other {sources} report: “{quote}”",
        "row_columns": " (from a table whose columns are: {columns})",
        "rows_between": "; ",
        "contradiction": "Sources may disagree on “{measure}”: {values}.",
        "no_answer": "The sources found do not answer this question: no passage in them speaks to what it asks, "
                     "so nothing is quoted.",
        "no_answer_partly": "The sources found may not answer this question: no passage in them speaks clearly to "
                            "what it asks; the passages quoted only touch on it.",
        "no_mention": "The sources found may not answer this question: none of them mentions {names}.",
        "across_languages": "The sources found may not answer this question: they are in another language, and "
                            "the passages quoted were chosen by what they mean, read across languages, not by its "
                            "words.",
        "title": "Research report",
        "answer": "Answer",
        "findings": "Evidence",
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
        "more_evidence": "The report quotes {count} passages of the sources as evidence.",
        "citability": "citability",
    },
    "zh": {
        "no_sources": "该任务没有找到任何来源，因此没有可供综合的证据。",
        "gap_dimension": "未找到关于“{dimension}”的证据。",
        "gap_part": "来源没有回答问题的这一部分：“{part}”。",
        "gap_part_touched": "来源可能没有回答问题的这一部分：“{part}”——有段落与之相关，但没有哪一段明确讲到它。",
        "says_one": "{domain} 指出：“{quote}”",
        "says_many": "{domain} 等 {count} 个来源指出：“{quote}”",
        "row_columns": "（摘自表格，各列为：{columns}）",
        "rows_between": "；",
        "contradiction": "各来源在“{measure}”上可能存在分歧：{values}。",
        "no_answer": "找到的来源没有回答这个问题：没有哪一段讲到它问的内容，因此不作引用。",
        "no_answer_partly": "找到的来源可能没有回答这个问题：没有哪一段明确讲到它问的内容，所引用的段落只是与之相关。",
        "no_mention": "找到的来源可能没有回答这个问题：其中没有一处提到 {names}。",
        "across_languages": "找到的来源可能没有回答这个问题：它们是用另一种语言写的，所引用的段落是按意思跨语言选出的，"
                            "而不是按问题的词语。",
        "title": "研究报告",
        "answer": "回答",
        "findings": "证据",
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
        "more_evidence": "报告引用了来源中的 {count} 段原文作为证据。",
        "citability": "可引用性",
    },
}


def labels(language: str) -> dict[str, str]:
    return LABELS.get(language, LABELS["en"])


def detect_language(question: str) -> str:
    """Chinese when the question contains Chinese characters; English otherwise."""
    return "zh" if has_han(question) else "en"
