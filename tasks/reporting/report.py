"""Publishing a report (docs/reports.md): the report step reads a task's
sources from the lake, has them synthesized, modeled and built into a
ResearchReport (tasks.reporting.build), and saves report.md, report.json and
report.html together with the task's `reports` and `report_citations`
catalog rows. Loading a published report back is tasks.reporting.published
(re-exported here).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import httpx

from schemas.report import ModelBlueprint, ResearchReport, SynthesisResult
from tasks.common.llm import LLMConfig
from tasks.common.settings import Settings
from tasks.common.text import counted
from tasks.lake.catalog import Catalog, current_flow_run, open_catalog
from tasks.lake.exports import refresh_exports
from tasks.lake.files import Lake, LakeWrite
from tasks.lake.sources import consolidated_sources, task_query_texts
from tasks.reporting.build import build_report, numbered, render_json, render_markdown
from tasks.reporting.html import render_html
from tasks.reporting.layout import answer_of, source_numbers
from tasks.reporting.published import FORMATS, ReportNotFound, load_report
from tasks.synthesis.modeling import build_blueprint
from tasks.common.sentence_model import vectors_kept_in
from tasks.synthesis.synthesizer import DEFAULT_MAX_SOURCES, SynthesisInput, synthesis_input, synthesize_material

__all__ = ["FORMATS", "PublishedReport", "ReportNotFound", "build_report", "compose_report", "load_report",
           "publish_report", "read_synthesis_input", "render_json", "render_markdown", "store_report"]

# -- the lake ---------------------------------------------------------------------

def report_keys(task_id: str, report_id: str) -> dict[str, str]:
    return {fmt: Lake.report_key(task_id, report_id, name) for fmt, name in FORMATS.items()}


def _report_row(task_id: str, report: ResearchReport, synthesis: SynthesisResult, keys: dict[str, str],
                citations: list[dict[str, Any]]) -> dict[str, Any]:
    """The task's `reports` row, by column; its counts of `citations` (its
    report_citations rows) are theirs, so every surface counts the same."""
    meta = report.metadata
    return {
        "task_id": task_id,
        "generated_at": datetime.fromisoformat(meta.generatedAt) if meta.generatedAt else datetime.now(timezone.utc),
        "question": synthesis.question, "language": synthesis.language, "synthesizer": synthesis.synthesizer,
        "source_count": len(synthesis.sources), "cited_source_count": len(report.sources),
        "citation_count": len(citations), "unverified_count": sum(1 for c in citations if not c["verified"]),
        "insight_count": len(synthesis.synthesized_insights), "warning_count": len(meta.warnings),
        "md_path": keys["md"], "html_path": keys["html"], "json_path": keys["json"],
        "duration_ms": meta.durationMs, "tokens": meta.tokens, "flow_run_id": current_flow_run(),
        "first_insight": first.text if (first := next(iter(answer_of(synthesis)), None)) else None,
    }


def citation_rows(task_id: str, report: ResearchReport) -> list[dict[str, Any]]:
    """The `report_citations` rows of a report: every quote it holds, with
    its source's note number, where it lies in the source's stored text,
    and the section it is in (answer, insight: a passage of the evidence,
    data_point, contradiction, gap, model: a core driver's evidence)."""
    synthesis = report.synthesis
    if synthesis is None:
        return []
    numbers = source_numbers(report.sources)
    fields = {ref.source_id: ref.text_field for ref in synthesis.sources}
    sections: list[tuple[str, list]] = [
        ("answer", [p.citations for p in synthesis.answer]),
        ("insight", [i.citations for i in synthesis.synthesized_insights]),
        ("data_point", [p.citations for p in synthesis.key_data_points]),
        *((item.kind, [item.citations]) for item in synthesis.contradictions_or_gaps),
        ("model", [[d.evidence] if d.evidence else [] for d in (report.model.coreDrivers if report.model else [])]),
    ]
    rows = []
    for section, items in sections:
        for index, citations in enumerate(items):
            rows += [{"task_id": task_id, "citation_number": numbers.get(c.source_id) if c.verified else None,
                      "source_id": c.source_id, "url": c.url, "title": c.title, "quote": c.quote,
                      "quote_start": c.start, "quote_end": c.end, "verified": c.verified, "section": section,
                      "item_index": index, "quoted_field": fields.get(c.source_id, "content_text")}
                     for c in citations]
    return rows


def store_report(catalog: Catalog, task_id: str, report: ResearchReport, synthesis: SynthesisResult,
                 blueprint: ModelBlueprint | None) -> dict[str, str]:
    """Write report.md/.json/.html under a folder of their own and record the
    task's `reports` row and `report_citations` rows in one commit: readers
    see the old report or the new one, never a mix. The previous report's
    files go once the commit is in; a failed commit takes the new files back."""
    if report.synthesis is None or report.model is None:
        # report.json should carry its evidence even if the caller built the
        # report by hand; don't mutate the caller's object.
        report = report.model_copy(update={"synthesis": report.synthesis or numbered(synthesis),
                                           "model": report.model or blueprint})
    keys = report_keys(task_id, uuid.uuid4().hex[:16])
    write = LakeWrite(catalog.lake)
    write.put(keys["md"], render_markdown(report).encode("utf-8"))
    write.put(keys["json"], render_json(report).encode("utf-8"))
    write.put(keys["html"], render_html(report).encode("utf-8"))

    citations = citation_rows(task_id, report)

    def record(cat: Catalog) -> None:
        write.deletes.clear()
        for old in cat.rows("report_paths", [task_id]):
            for key in old:
                write.delete_after_commit(key)
        cat.run("report_delete", [task_id])
        cat.run("report_insert", _report_row(task_id, report, report.synthesis, keys, citations))
        cat.run("report_citation_delete", [task_id])
        for row in citations:
            cat.run("report_citation_insert", row)

    try:
        catalog.transaction(record, write, action="report", task_id=task_id,
                            detail=f"{counted(len(citations), 'citation')} of {counted(len(report.sources), 'source')}")
    except BaseException:
        for key in keys.values():
            catalog.lake.delete(key)
        raise
    refresh_exports(catalog, task_id, ("reports", "report_citations"))
    return keys


# -- the whole step ---------------------------------------------------------------

def read_synthesis_input(catalog: Catalog, task_id: str, plan: Any = None, *, question: str | None = None,
                         max_sources: int = DEFAULT_MAX_SOURCES,
                         source_ids: list[str] | None = None) -> SynthesisInput:
    """What synthesis needs of a task, read from the lake: its consolidated
    sources (only `source_ids` when given) and its question (`question`,
    else the plan's, else the task's query texts)."""
    return synthesis_input(task_id, consolidated_sources(catalog, task_id, max_sources, source_ids),
                           task_query_texts(catalog, task_id), plan, question=question)


@dataclass(frozen=True)
class PublishedReport:
    report: ResearchReport
    keys: dict[str, str]
    uris: dict[str, str]


def compose_report(material: SynthesisInput, *, llm: LLMConfig | None = None,
                   client: httpx.Client | None = None) -> tuple[ResearchReport, SynthesisResult, ModelBlueprint]:
    """synthesize → model → report, from material already read from the
    lake: no catalog is open while a model may be called. A run that gave
    up on its model says so in the report's first warning, once: why, and
    which stages ran without it."""
    synthesis = synthesize_material(material, llm=llm, client=client)
    blueprint = build_blueprint(synthesis, llm=llm, client=client)
    if llm is not None and llm.use is not None and (without := llm.use.without_model()):
        synthesis.warnings.insert(0, without)
    return build_report(synthesis, blueprint, task_id=material.task_id), synthesis, blueprint


def publish_report(settings: Settings, task_id: str, plan: dict | None = None, *, question: str | None = None,
                   llm: LLMConfig | None = None, client: httpx.Client | None = None,
                   source_ids: list[str] | None = None, purpose: str = "report") -> PublishedReport:
    """The report step of one consolidated task (restricted to `source_ids`
    when a governed run selected them): read its sources in one short
    catalog session, release the catalog while synthesis and modeling run
    (they may call a model), then record the report in a second session."""
    with open_catalog(settings, f"{purpose}: read sources", read_only=True) as catalog:
        material = read_synthesis_input(catalog, task_id, plan, question=question, source_ids=source_ids)
    with vectors_kept_in(settings.sentence_vectors_path):
        report, synthesis, blueprint = compose_report(material, llm=llm, client=client)
    with open_catalog(settings, f"{purpose}: store") as catalog:
        keys = store_report(catalog, task_id, report, synthesis, blueprint)
        uris = {name: catalog.lake.uri(key) for name, key in keys.items()}
    return PublishedReport(report, keys, uris)
