"""What report.md and report.html share, so the two show the same report:
the text as people may be shown it, the reading order of the insights, one
citation per source in an item, how a figure is written, and which URLs
may become links.

Its own module so that tasks.reporting.report (which builds the report and publishes
the HTML too) and tasks.reporting.html can both use it without importing each
other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel

from schemas.report import Citation, Insight, ReportSource, SynthesisResult
from schemas.urls import url_scheme
from tasks.common.text import printable
from tasks.synthesis.labels import labels

T = TypeVar("T")

LINK_SCHEMES = frozenset({"http", "https", "file"})


def linkable(url: str) -> bool:
    """Source URLs are untrusted: only http(s)/file ever become links."""
    return url_scheme(url) in LINK_SCHEMES


def unique_citations(citations: Iterable[Citation]) -> list[Citation]:
    """The item's evidence: one verified citation per source (the first,
    i.e. the lead quote). A quote not found in its source is no evidence."""
    seen: set[str] = set()
    out = []
    for c in citations:
        if c.verified and c.source_id not in seen:
            seen.add(c.source_id)
            out.append(c)
    return out


def unverified_count(citations: Iterable[Citation]) -> int:
    return sum(1 for c in citations if not c.verified)


def source_numbers(sources: Iterable[ReportSource]) -> dict[str, int]:
    """source_id → note number, read back from the report's cited sources
    so a page rendered from a stored report numbers as the report did."""
    return {src.sourceId: src.noteIndex for src in sources if src.sourceId}


def dimension_groups(synthesis: SynthesisResult) -> dict[str | None, list[int]]:
    groups: dict[str | None, list[int]] = {}
    for i, insight in enumerate(synthesis.synthesized_insights):
        groups.setdefault(insight.dimension, []).append(i)
    return groups


CAUTIONS = ("no_answer_partly", "no_mention", "across_languages")  # labels.py: said of quotes that may not answer


def caution(s: SynthesisResult) -> str | None:
    """The warning that the quotes may not answer the question (they only
    touch on it, none of the sources mentions what it names, or they are in
    another language and were chosen by meaning): a reader needs it
    before the quotes, not after them."""
    lab = labels(s.language)
    openings = tuple(lab[name].split("{")[0] for name in CAUTIONS)
    return next((g.description for g in s.contradictions_or_gaps if g.kind == "gap" and not g.dimension
                 and g.description.startswith(openings)), None)


def answer_of(s: SynthesisResult) -> list[Insight]:
    """The answer a reader reads first. A report made before reports had one
    answers with its first findings: the best of each dimension first (each
    group is in rank order), then the next best."""
    if s.answer:
        return s.answer
    groups = list(dimension_groups(s).values())
    order = [i for depth in range(max(map(len, groups), default=0)) for g in groups if depth < len(g)
             for i in [g[depth]]]
    return [s.synthesized_insights[i] for i in order[:EARLIER_ANSWER_FINDINGS]]


EARLIER_ANSWER_FINDINGS = 3


def answer_groups(s: SynthesisResult) -> list[tuple[str | None, list[Insight]]]:
    """The answer's points under the part of the question each answers (one
    group, unlabelled, for a question of one part)."""
    groups: dict[str | None, list[Insight]] = {}
    for point in answer_of(s):
        groups.setdefault(point.dimension if s.answer else None, []).append(point)
    return list(groups.items())


def figure(value: float, unit: str) -> str:
    return f"{value:g}{unit}" if unit in ("%", "x") or not unit.isascii() else f"{value:g} {unit}".strip()


def displayed(value: T) -> T:
    """A copy of a report (or any part of one) as people are shown it: every
    text in it without control characters or bidirectional controls
    (tasks.common.text.printable), which documents may hold and which would
    reorder or hide what a reader sees. report.md, report.html and the
    terminal are rendered from it; the report itself, its JSON and the
    lake keep the text as stored, so a quote still equals its source's
    text between its offsets."""
    if isinstance(value, str):
        return printable(value)  # type: ignore[return-value]
    if isinstance(value, BaseModel):
        copy = value.model_copy(update={name: displayed(getattr(value, name)) for name in type(value).model_fields})
        if copy.__pydantic_extra__:  # metadata a report carries beside its fields (a watch's changes)
            copy.__pydantic_extra__ = displayed(copy.__pydantic_extra__)
        return copy  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        return type(value)(displayed(item) for item in value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {key: displayed(item) for key, item in value.items()}  # type: ignore[return-value]
    return value
