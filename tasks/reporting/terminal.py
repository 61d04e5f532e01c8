"""The answer as a terminal shows it after a research run: the answer's
points with their note numbers (and how many passages of evidence the
report holds), what the sources do not cover, and the sources the answer
cites — plain text wrapped to the terminal's width, numbered as report.md
and report.html number them. Source text is untrusted: nothing
it holds reaches the terminal as a control sequence."""

from __future__ import annotations

import re

from rich.cells import cell_len

from schemas.report import ResearchReport
from tasks.common.text import UNSPACED_CHARS, printable
from tasks.reporting.layout import answer_groups, answer_of, caution, displayed, unique_citations
from tasks.synthesis.labels import labels



def answer_lines(report: ResearchReport, width: int = 80) -> list[str]:
    report = displayed(report)
    synthesis = report.synthesis
    if synthesis is None:
        return []
    lab = labels(synthesis.language)
    numbers = {src.sourceId: src.noteIndex for src in report.sources if src.sourceId}
    lines = [*_wrapped(synthesis.question, width), ""]
    said = caution(synthesis)
    if said:
        lines += _wrapped(said, width, bullet="– ")
    groups = answer_groups(synthesis)
    for label, points in groups:
        if label:
            lines += _wrapped(label, width)
        for point in points:
            marks = "".join(f"[{numbers[c.source_id]}]" for c in unique_citations(point.citations)
                            if c.source_id in numbers)
            lines += _wrapped(f"{point.text} {marks}".rstrip(), width, bullet="• ")
    if not groups:
        lines.append(lab["nothing"])
    elif synthesis.synthesized_insights:
        lines.append(lab["more_evidence"].format(count=len(synthesis.synthesized_insights)))
    for gap in (g.description for g in synthesis.contradictions_or_gaps if g.kind == "gap"):
        if gap != said:
            lines += _wrapped(gap, width, bullet="– ")
    cited = {c.source_id for point in answer_of(synthesis) for c in unique_citations(point.citations)}
    shown_sources = [src for src in report.sources if src.sourceId in cited]
    if shown_sources:
        lines += ["", lab["sources"]]
        for src in shown_sources:
            mark = f"[{src.noteIndex}] "
            lines += _wrapped(f"{mark}{src.title}", width, hang=len(mark))
            lines.append(" " * len(mark) + printable(src.url))  # whole, to copy or click
    return lines


def _wrapped(text: str, width: int, bullet: str = "", hang: int | None = None) -> list[str]:
    """Lines of at most `width` terminal cells (a CJK character takes two),
    broken between words, or between characters of text written without
    spaces; the lines after the first indented under the bullet."""
    indent = " " * (cell_len(bullet) if hang is None else hang)
    width = max(40, width)
    lines, line = [], bullet
    for piece in _PIECES.findall(" ".join(printable(text).split())):
        if line.strip() and line != bullet and cell_len(line + piece.rstrip()) > width:
            if piece[0] in _NO_LINE_START:  # a closing mark hangs past the edge, against the word it closes
                line = line.rstrip()
            else:
                lines.append(line.rstrip())
                line = indent
                piece = piece.lstrip()
        while cell_len(line + piece.rstrip()) > width:  # a word longer than a line
            room = width - cell_len(line)
            cut = next((n for n in range(len(piece), 0, -1) if cell_len(piece[:n]) <= room), 0)
            if not cut and line.strip() and piece[0] not in _NO_LINE_START:  # not even a wide first character fits
                lines.append(line.rstrip())
                line = indent
                continue
            cut = max(1, cut)
            lines.append(line + piece[:cut])
            line, piece = indent, piece[cut:]
        line += piece
    if line.strip() or not lines:  # not an empty line after a closing mark that hung
        lines.append(line.rstrip())
    return lines


_NO_LINE_START = "，。、；：！？）」』”’,.;:!?)"
# A word with the space after it, or one character of text without spaces.
_PIECES = re.compile(f"[{UNSPACED_CHARS}] ?|[^\\s{UNSPACED_CHARS}]+ ?| ")
