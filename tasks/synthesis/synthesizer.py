"""Synthesis: a task's consolidated sources → cited insights, key data
points, contradictions and gaps (docs/reports.md). This is the
interface flows call: it takes a task's sources (rows the caller read from
the lake, see tasks.reporting.report.read_synthesis_input) and picks a
synthesizer.

Two synthesizers share one signature, `(sources, question, plan)`:
- extractive (default, no model): tasks/synthesis/extractive.py;
- LLM (`llm=LLMConfig`): tasks/synthesis/llm_synthesis.py.

Either way every citation's quote is checked against the cited source's
text (case-, whitespace- and quote-style-insensitive; tasks/synthesis/base.py);
a quote that is not there stays, marked `verified=false`, with a warning.

Failure policy of the LLM path (chosen): `llm_synthesis` raises `LLMError`
for an unreachable model or an unusable answer; `synthesize` falls back to
the extractive synthesizer and says so in `warnings`, unless
`fallback=False`, in which case the LLMError propagates. Once the run has
given up on the model (tasks/common/model_use.py) the report says so in one
warning of the run's own (tasks/reporting/report.py), not here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from schemas.report import SynthesisResult
from tasks.synthesis.extractive import extractive_synthesis
from tasks.common.llm import LLMConfig, LLMError, model_given_up
from tasks.synthesis.base import Source
from tasks.synthesis.llm_synthesis import llm_synthesis

DEFAULT_MAX_SOURCES = 30  # at most 10 per source kind, 30 in all: enough evidence, a bounded prompt


# -- a task's sources and question ---------------------------------------------

def sources_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Source]:
    """Sources from a task's consolidated rows (best first, keyed by column
    name: source_id, url, title, snippet, content_text, language,
    score_final), numbered from 1."""
    return [Source(number=i, source_id=r["source_id"], url=r["url"], title=r["title"] or "",
                   snippet=r["snippet"] or "", content_text=r["content_text"] or "", language=r["language"],
                   score=float(r["score_final"] or 0.0))
            for i, r in enumerate(rows, start=1)]


def plan_dict(plan: Any) -> dict | None:
    """The plan as a dict: flows may pass the ResearchPlan model itself."""
    if plan is None or isinstance(plan, dict):
        return plan
    return plan.model_dump(mode="json") if hasattr(plan, "model_dump") else None


def resolve_question(question: str | None, plan: dict | None, queries: list[str] | None = None,
                     fallback: str = "") -> str:
    """The question to answer: given > the plan's > its topic > the task's queries."""
    plan = plan or {}
    summary = plan.get("search_summary") if isinstance(plan.get("search_summary"), dict) else {}
    for candidate in (question, plan.get("question"), summary.get("interpreted_topic")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return "; ".join(queries or []) or fallback


# -- the interface flows call --------------------------------------------------------

def synthesize(sources: list[Source], question: str, plan: dict | None = None, *,
               llm: LLMConfig | None = None, client: httpx.Client | None = None,
               fallback: bool = True) -> SynthesisResult:
    """Extractive unless `llm` is given; an LLM failure falls back to the
    extractive synthesizer with a warning (or raises, with fallback=False)."""
    started = time.monotonic()
    plan = plan_dict(plan)
    if llm is None:
        result = extractive_synthesis(sources, question, plan)
    else:
        try:
            result = llm_synthesis(sources, question, plan, llm, client=client)
        except LLMError as exc:
            if not fallback:
                raise
            result = extractive_synthesis(sources, question, plan)
            if not model_given_up(llm):
                result.warnings.insert(0, f"LLM synthesis failed ({exc}); the extractive synthesizer was used instead")
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


@dataclass(frozen=True)
class SynthesisInput:
    """Everything synthesis needs from the lake, read in one short catalog
    session, so that no catalog is held while a model is called."""

    task_id: str
    sources: list[Source]
    question: str
    plan: dict | None = None


def synthesis_input(task_id: str, source_rows: Iterable[Mapping[str, Any]], queries: list[str],
                    plan: Any = None, *, question: str | None = None) -> SynthesisInput:
    """A task's sources (its consolidated rows, read by the caller) and its
    question: `question`, else the plan's, else the task's query texts."""
    plan = plan_dict(plan)
    text = resolve_question(question, plan, queries, fallback=task_id)
    return SynthesisInput(task_id, sources_from_rows(source_rows), text, plan)


def synthesize_material(material: SynthesisInput, *, llm: LLMConfig | None = None,
                        client: httpx.Client | None = None, fallback: bool = True) -> SynthesisResult:
    result = synthesize(material.sources, material.question, material.plan, llm=llm, client=client,
                        fallback=fallback)
    result.task_id = material.task_id
    return result
