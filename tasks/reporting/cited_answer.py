"""A report's answer as data, for programs (the MCP `research` tool): the
points the terminal and report.md open with, each with the numbers of the
sources it cites, the caution said before them, what the sources do not
cover, and the cited sources — numbered as the report numbers them. Text
is as people are shown it (layout.displayed): no control or bidirectional
characters."""

from __future__ import annotations

from schemas.agent import AnswerPoint, CitedAnswer, CitedSource
from schemas.report import ResearchReport
from tasks.reporting.layout import answer_groups, answer_of, caution, displayed, source_numbers, unique_citations


def cited_answer(report: ResearchReport) -> CitedAnswer | None:
    """The report's answer; None for a report without its synthesis (none is made so)."""
    report = displayed(report)
    synthesis = report.synthesis
    if synthesis is None:
        return None
    numbers = source_numbers(report.sources)
    points = [AnswerPoint(text=point.text, part=part,
                          citations=[numbers[c.source_id] for c in unique_citations(point.citations)
                                     if c.source_id in numbers])
              for part, group in answer_groups(synthesis) for point in group]
    said = caution(synthesis)
    cited = {c.source_id for point in answer_of(synthesis) for c in unique_citations(point.citations)}
    return CitedAnswer(
        question=synthesis.question, points=points, caution=said,
        gaps=[g.description for g in synthesis.contradictions_or_gaps if g.kind == "gap" and g.description != said],
        sources=[CitedSource(number=src.noteIndex, title=src.title, url=src.url)
                 for src in report.sources if src.sourceId in cited],
        evidence_passages=len(synthesis.synthesized_insights))
