"""What agents get back over the Model Context Protocol (`searchlake mcp`,
docs/mcp.md): each tool's result as a model, published to clients as the
tool's output schema. Numbers are the report's own: source [n] here is
source [n] in report.md, report.html and the terminal."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class AnswerPoint(BaseModel):
    text: str = Field(description="One sentence of the answer, verbatim from a source")
    citations: list[int] = Field(description="The numbers of the sources it cites (`sources[].number`)")
    part: str | None = Field(default=None, description="The part of the question it answers, on a question of several")


class CitedSource(BaseModel):
    number: int = Field(description="The number the answer and the report cite it by")
    title: str
    url: str


class CitedAnswer(BaseModel):
    """A report's answer: what a person reads first."""

    question: str
    points: list[AnswerPoint] = Field(description="The answer's points, each cited")
    caution: str | None = Field(default=None, description="Said before the points when they only touch the question")
    gaps: list[str] = Field(default_factory=list, description="What the sources do not cover")
    sources: list[CitedSource] = Field(description="The sources the points cite")
    evidence_passages: int = Field(description="Passages of evidence the whole report quotes")


class ResearchOutcome(BaseModel):
    task_id: str = Field(description="The task: read_report, top_sources and a later research run (to resume) name it")
    trace_id: str = Field(description="The run")
    status: str = Field(description="How the run ended: complete, failed, …")
    summary: str = Field(description="How the run ended, how long it took and what it found, in one line")
    answer: CitedAnswer | None = Field(description="The report's answer; none when the run published no report")
    report: str | None = Field(description="The report's resource URI (read_report reads it too)")


class TaskEntry(BaseModel):
    task_id: str
    question: str | None = None
    runs: int = Field(description="Research runs of the task")
    last_status: str | None = Field(default=None, description="How its latest run ended")
    last_run_at: str | None = Field(default=None, description="When its latest run started (ISO 8601)")
    last_landed_at: str | None = Field(default=None, description="When its latest bundle landed (ISO 8601)")


class TaskList(BaseModel):
    tasks: list[TaskEntry] = Field(description="The lake's tasks, the latest first")
    more: bool = Field(description="Whether the lake holds more tasks than listed")


class RankedSource(BaseModel):
    final_rank: int
    score: float | None = Field(description="score_final, rounded to 3 places")
    seen_count: int | None = Field(description="How many queries found it")
    query_id: str | None = Field(description="The query that found it first")
    title: str | None = None
    url: str | None = None


class TopSources(BaseModel):
    task_id: str
    sources: list[RankedSource] = Field(description="Best first")


class QueryRows(BaseModel):
    columns: list[str]
    rows: list[list[Any]] = Field(description="Each row's values in column order, as JSON has them")
    row_count: int = Field(description="Rows the query returned")
    truncated: bool = Field(description="Whether only the first max_rows of them are given")
