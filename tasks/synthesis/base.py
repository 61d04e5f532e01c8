"""What both synthesizers build on: the Source they read, the plan's key
dimensions they cover, and the finishing every result gets (each quote
checked against its source, citability, the empty result of a task without
sources)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

from schemas.report import ANSWER_WORDS, Citation, ContradictionOrGap, Insight, SourceRef, SynthesisResult
from tasks.common.text import first_that_read_within
from schemas.urls import domain_of, file_name_of, url_scheme
from tasks.synthesis.labels import labels
from tasks.synthesis.passages import clip, locate


@dataclass
class Source:
    """One consolidated source as the synthesizers see it."""

    number: int
    source_id: str
    url: str
    title: str = ""
    snippet: str = ""
    content_text: str = ""
    score: float = 0.0
    language: str | None = None

    @property
    def domain(self) -> str:
        return source_label(self.url)

    @property
    def text_field(self) -> str:
        """Which stored field quotes come from: the lake's `content_text`, or
        the snippet for a source the lake holds no text for."""
        return "content_text" if (self.content_text or "").strip() else "snippet"

    @property
    def text(self) -> str:
        """The text quotes are taken from and checked against: exactly what
        the lake stores for this source (never the title), so every quote
        can be checked from the lake alone."""
        return self.content_text if self.text_field == "content_text" else (self.snippet or "")

    @cached_property
    def document(self) -> str:
        """The document this source is a view of: its URL without query or
        fragment. Two sources of one page (the default corpus's overlapping
        topics of one docs.python.org page) are one document."""
        return document_key(self.url)

    def ref(self) -> SourceRef:
        return SourceRef(number=self.number, source_id=self.source_id, url=self.url,
                         title=self.title or "", domain=self.domain, text_field=self.text_field)

    def cite(self, start: int, end: int) -> Citation:
        """A citation of text[start:end], verbatim."""
        return Citation(source_id=self.source_id, url=self.url, title=self.title or "", quote=self.text[start:end],
                        domain=self.domain, source_number=self.number, start=start, end=end)

    def cite_quote(self, quote: str) -> Citation:
        """A citation of a quote someone else chose (a model); unchecked until
        `verify_citations`."""
        return Citation(source_id=self.source_id, url=self.url, title=self.title or "", quote=quote,
                        domain=self.domain, source_number=self.number)


# A Sphinx site ships each page's source beside it: _sources/a/b.rst.txt is a/b.html.
_SPHINX_SOURCE = re.compile(r"/_sources/(.+?)(?:\.rst)?\.txt$")


def document_key(url: str) -> str:
    parts = urlsplit(url)
    path = _SPHINX_SOURCE.sub(r"/\1.html", parts.path.rstrip("/"))
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc.casefold().removeprefix('www.')}{path}"
    return f"{parts.scheme}://{parts.netloc}{path}"


def source_label(url: str) -> str:
    """What a citation link shows: the domain (without www.), or for a local
    file its name as written (刹车片.md, not its percent-encoding)."""
    scheme = url_scheme(url)
    if scheme in ("http", "https"):
        return domain_of(url) or url
    if scheme == "file":
        return file_name_of(url)
    return url


def plan_dimensions(plan: dict | None) -> list[str]:
    """The plan's key dimensions as strings (a model may write objects)."""
    summary = (plan or {}).get("search_summary") or {}
    dims = summary.get("key_dimensions") if isinstance(summary, dict) else None
    out: list[str] = []
    for dim in dims or []:
        text = (dim.get("name") or dim.get("dimension") or "") if isinstance(dim, dict) else str(dim)
        if text and str(text).strip() and str(text).strip() not in out:
            out.append(str(text).strip())
    return out


# -- finishing: verification and citability ---------------------------------------

def verify_citations(result: SynthesisResult, sources: list[Source]) -> SynthesisResult:
    """Mark each citation verified when its quote occurs in the cited
    source's stored text; a verified quote becomes that text's own words at
    [start, end), so the lake alone proves it. An unverified one loses its
    offsets and is reported in `warnings`."""
    by_id = {s.source_id: s for s in sources}
    for citation in result.all_citations():
        source = by_id.get(citation.source_id)
        span = _span(citation, source.text) if source else None
        citation.verified = span is not None
        if span is not None:
            citation.start, citation.end = span
            citation.quote = source.text[span[0]:span[1]]
        else:
            citation.start = citation.end = None
            shown = clip(citation.quote, 80) or "(empty quote)"
            result.warnings.append(f"unverified citation: the quote “{shown}” was not found in the text of "
                                   f"{citation.domain or citation.url}; it is not shown as evidence")
    return result


def _span(citation: Citation, text: str) -> tuple[int, int] | None:
    """Where a citation's quote lies in the text: at its own offsets when the
    text holds the quote there verbatim (what the extractive synthesizer
    cites), else wherever `locate` finds it."""
    start, end = citation.start, citation.end
    if citation.quote and start is not None and end is not None and text[start:end] == citation.quote:
        return start, end
    return locate(citation.quote, text)


def citability(citations: list[Citation]) -> str:
    """high: verified by two or more sources; medium: by one; low: cited but
    unverified; none: uncited."""
    verified = {c.source_id for c in citations if c.verified}
    if len(verified) >= 2:
        return "high"
    if verified:
        return "medium"
    return "low" if citations else "none"


def finish(result: SynthesisResult, sources: list[Source]) -> SynthesisResult:
    verify_citations(result, sources)
    for item in [*result.answer, *result.synthesized_insights, *result.key_data_points]:
        item.citability = citability(item.citations)
    result.sources = [s.ref() for s in sources]
    return result


def within_answer(points: list[Insight]) -> list[Insight]:
    """The points of an answer, in order, while they fit in ANSWER_WORDS words."""
    return first_that_read_within(points, ANSWER_WORDS)


def no_sources_result(question: str, language: str, dims: list[str], synthesizer: str) -> SynthesisResult:
    """A task without sources: every dimension is a gap; not an error."""
    lab = labels(language)
    gaps = [ContradictionOrGap(kind="gap", description=lab["no_sources"])]
    gaps += [ContradictionOrGap(kind="gap", description=lab["gap_dimension"].format(dimension=d), dimension=d)
             for d in dims]
    return SynthesisResult(question=question, language=language, contradictions_or_gaps=gaps,
                           synthesizer=synthesizer, warnings=["no sources: nothing to synthesize"])
