"""Contracts of the synthesis, modeling and reporting steps.

`SynthesisResult` is the synthesis agent's output (synthesized_insights,
key_data_points, contradictions_or_gaps, each claim cited and marked for
citability). `ModelBlueprint` and `ResearchReport` keep the field names
report readers already rely on (camelCase on the wire; dump with
`by_alias=True`); fields are added, never renamed (docs/reports.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Language = Literal["en", "zh"]
Citability = Literal["high", "medium", "low", "none"]


class SourceRef(BaseModel):
    """One source the synthesizer was given. In a report, `number` is the
    source's one number: cited sources come first, numbered in the order a
    reader meets them ([1], [2], …, the same as `sources[].noteIndex`)."""

    number: int
    source_id: str
    url: str
    title: str = ""
    domain: str = ""
    text_field: Literal["content_text", "snippet"] = "content_text"  # the stored field its quotes come from


class Citation(BaseModel):
    """A quote from one source. A verified quote is the verbatim text at
    [start, end) of the source's stored text (`consolidated.content_text`,
    or its snippet when the lake holds no text for it); an unverified one
    was not found there and has no offsets."""

    source_id: str
    url: str
    title: str = ""
    quote: str = ""
    domain: str = ""
    verified: bool = False
    source_number: int | None = None
    start: int | None = None
    end: int | None = None


# The longest answer, in words (a Chinese character counts two thirds of a
# word): what a person reads in a minute, as TREC's RAG track budgets one.
ANSWER_WORDS = 400


class Insight(BaseModel):
    text: str
    citations: list[Citation] = Field(default_factory=list)
    dimension: str | None = None
    citability: Citability = "none"


class KeyDataPoint(BaseModel):
    value: float
    unit: str = ""
    measure: str = ""
    text: str = ""
    citations: list[Citation] = Field(default_factory=list)
    citability: Citability = "none"


class ContradictionOrGap(BaseModel):
    kind: Literal["contradiction", "gap"]
    description: str
    citations: list[Citation] = Field(default_factory=list)
    dimension: str | None = None


class SynthesisResult(BaseModel):
    question: str
    language: Language = "en"
    task_id: str | None = None
    # The answer a reader reads first, in at most ANSWER_WORDS words: the
    # sentences that say what the question asks, each cited; `dimension` is
    # the part of the question a point answers, on a question of several.
    answer: list[Insight] = Field(default_factory=list)
    # The evidence: the passages around what answers, verbatim.
    synthesized_insights: list[Insight] = Field(default_factory=list)
    key_data_points: list[KeyDataPoint] = Field(default_factory=list)
    contradictions_or_gaps: list[ContradictionOrGap] = Field(default_factory=list)
    synthesizer: str = "extractive"
    warnings: list[str] = Field(default_factory=list)
    sources: list[SourceRef] = Field(default_factory=list)
    duration_ms: int = 0
    tokens: int = 0

    def all_citations(self) -> list[Citation]:
        """Every citation, in reading order: the answer, insights, data
        points, then contradictions and gaps (the order reports number them in)."""
        groups = [*self.answer, *self.synthesized_insights, *self.key_data_points, *self.contradictions_or_gaps]
        return [c for item in groups for c in item.citations]


# -- ModelBlueprint -----------------------------------------------------------

class _Contract(BaseModel):
    # Accept both the wire name and the Python name so blueprints read from
    # JSON (e.g. an LLM's answer) and built in code use the same model.
    model_config = ConfigDict(populate_by_name=True)


class CoreDriver(_Contract):
    name: str
    description: str = ""
    evidenceRefs: list[int] = Field(default_factory=list)
    # Addition: the verified citation a description quotes as its evidence.
    evidence: Citation | None = None


class Relationship(_Contract):
    from_: str = Field(alias="from")
    to: str
    type: str = "influence"
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class Scenario(_Contract):
    name: str
    assumptions: list[str] = Field(default_factory=list)
    outcomes: list[str] = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class Metric(_Contract):
    name: str
    estimate: float
    unit: str = ""
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class BlueprintMetadata(_Contract):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    durationMs: int = 0
    tokens: int = 0
    warnings: list[str] = Field(default_factory=list)


class ModelBlueprint(_Contract):
    modelType: str = "evidence_graph"
    coreDrivers: list[CoreDriver] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)
    scenarios: list[Scenario] = Field(default_factory=list)
    metrics: list[Metric] = Field(default_factory=list)
    metadata: BlueprintMetadata = Field(default_factory=BlueprintMetadata)

    def to_contract(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


# -- ResearchReport -----------------------------------------------------------

class OutlineSection(_Contract):
    heading: str
    bullets: list[str] = Field(default_factory=list)


class ReportSource(_Contract):
    """A cited source; `noteIndex` is the number its citations show ([n])."""

    title: str
    url: str
    noteIndex: int
    domain: str = ""
    sourceId: str | None = None


class ReportMetadata(_Contract):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    durationMs: int = 0
    tokens: int = 0
    streamed: bool = False
    taskId: str | None = None
    question: str = ""
    language: Language = "en"
    synthesizer: str = "extractive"
    generatedAt: str | None = None
    sourceCount: int = 0
    citationCount: int = 0
    unverifiedCount: int = 0
    insightCount: int = 0
    noCitations: bool = True
    stepDurationsMs: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class ResearchReport(_Contract):
    markdown: str
    outline: list[OutlineSection] = Field(default_factory=list)
    sources: list[ReportSource] = Field(default_factory=list)
    metadata: ReportMetadata = Field(default_factory=ReportMetadata)
    # Additions to the report's fields (backward compatible): the structured material the
    # report was written from, so report.json alone is auditable and the HTML
    # renderer needs nothing else.
    synthesis: SynthesisResult | None = None
    model: ModelBlueprint | None = None

    def to_contract(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)
