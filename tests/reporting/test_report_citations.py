"""Report citations a reader can check from the lake alone: the
report_citations view, one numbering of sources across md, json and html,
an invented model quote never shown as evidence, and the catalog free while
a model is being called."""

from __future__ import annotations

import json
import re

import httpx
from tests.report_helpers import CONFIG, PLAN, answer, chat_completion, make_sources

from tasks.lake.catalog import CatalogBusy, open_catalog
from tasks.lake.consolidation import consolidate
from tasks.lake.landing import land_files
from tasks.reporting.html import render_html
from tasks.reporting.report import build_report, load_report, publish_report
from tasks.synthesis.modeling import build_blueprint
from tasks.synthesis.synthesizer import synthesize

WRAPPED = (
    "Configuring builds — the pyproject’s tables\n"
    "===========================================\n\n"
    "The [build-system] table declares which build backend builds your\n"
    "project; pip reads it before anything else.\n\n"
    "Project metadata such as name and version lives in the [project]\n"
    "table, and every build backend reads it from there.\n"
)


def land(settings, inbox, new_bundle, new_item, task="t1"):
    items = [new_item("https://packaging.python.org/guide", 0.9, title="Configuring builds", content_text=WRAPPED,
                      snippet="… which build backend builds your project …"),
             new_item("https://peps.python.org/pep-0621/", 0.8, title="PEP 621",
                      content_text="This PEP specifies how to write a project's core metadata in a pyproject.toml "
                                   "file. The [project] table holds metadata such as name and version."),
             new_item("https://hatch.pypa.io/build", 0.7, title="Hatch",
                      snippet="Hatchling is a build backend. The build backend reads the [build-system] table first.")]
    inbox.write(new_bundle("q1", items, task_id=task, query_text="pyproject build backend metadata"))
    with open_catalog(settings) as catalog:
        land_files(catalog, [inbox.folder])
        consolidate(catalog, task)


def test_every_report_citation_is_checkable_at_its_offsets_in_the_lake(settings, lake, inbox, new_bundle, new_item):
    land(settings, inbox, new_bundle, new_item)
    published = publish_report(settings, "t1", PLAN)
    rows = lake.dicts(
        "SELECT r.*, c.content_text, c.snippet FROM report_citations r "
        "JOIN consolidated c USING (task_id, source_id) WHERE r.task_id = 't1' ORDER BY section, item_index")
    assert rows and {r["section"] for r in rows} >= {"insight", "model"}
    in_sql = lake.rows(
        "SELECT bool_and(substr(c.content_text, r.quote_start + 1, r.quote_end - r.quote_start) = r.quote) "
        "FROM report_citations r JOIN consolidated c USING (task_id, source_id) "
        "WHERE r.quoted_field = 'content_text'")
    assert in_sql == [(True,)]
    for row in rows:
        stored = row["content_text"] if row["quoted_field"] == "content_text" else row["snippet"]
        assert row["verified"] and stored[row["quote_start"]:row["quote_end"]] == row["quote"], row
        assert row["quote"] != "Configuring builds" and "…" not in row["quote"]
    numbers = {s.sourceId: s.noteIndex for s in published.report.sources}
    assert {r["source_id"]: r["citation_number"] for r in rows} == {sid: numbers[sid] for sid in {
        r["source_id"] for r in rows}}
    hatch = [r for r in rows if r["url"] == "https://hatch.pypa.io/build"]
    assert hatch and all(r["quoted_field"] == "snippet" for r in hatch)
    assert {"task_id", "citation_number", "source_id", "url", "title", "quote", "quote_start", "quote_end",
            "verified", "section"} <= set(rows[0])

    publish_report(settings, "t1", PLAN)  # a new report replaces the old one's citations
    assert lake.count("report_citations") == len(rows)


def test_md_json_and_html_number_the_sources_identically():
    synthesis = synthesize(make_sources(), PLAN["question"], PLAN)
    report = build_report(synthesis, build_blueprint(synthesis), task_id="t1")
    by_url = {s.url: s.noteIndex for s in report.sources}
    md_marks = re.findall(r"\[\\\[(\d+)\\\]\]\((\S+?)\)", report.markdown)
    assert md_marks and all(by_url[url] == int(n) for n, url in md_marks)
    doc = json.loads(report.model_dump_json(by_alias=True))
    numbers = {s["sourceId"]: s["noteIndex"] for s in doc["sources"]}
    listed = {s["source_id"]: s["number"] for s in doc["synthesis"]["sources"]}
    assert all(listed[sid] == n for sid, n in numbers.items())
    assert sorted(listed.values()) == list(range(1, len(listed) + 1))
    for insight in doc["synthesis"]["synthesized_insights"]:
        for citation in insight["citations"]:
            assert citation["source_number"] == listed[citation["source_id"]]
    html_marks = re.findall(r'data-note="(\d+)" data-source-id="([^"]+)"', render_html(report))
    assert html_marks and all(numbers[sid] == int(n) for n, sid in html_marks)


INVENTED = "Hatchling was designed by the Python Steering Council in 1999."


def test_an_invented_model_quote_is_never_shown_as_evidence(settings, lake, inbox, new_bundle, new_item):
    land(settings, inbox, new_bundle, new_item)
    doc = {"synthesized_insights": [
        {"text": "Hatchling is old.", "dimension": "build backend", "citations": [{"source": 3, "quote": INVENTED}]},
        {"text": "Metadata lives in [project].", "dimension": "project metadata",
         "citations": [{"source": 2, "quote": "The [project] table holds metadata such as name and version."}]}]}
    # Every call gets this answer: synthesis uses it, modeling cannot (it is
    # no blueprint) and falls back to the extractive blueprint.
    client = httpx.Client(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, json=chat_completion(answer(doc)))))
    published = publish_report(settings, "t1", PLAN, llm=CONFIG, client=client)
    with open_catalog(settings, read_only=True) as catalog:
        md, html = load_report(catalog, "t1", "md"), load_report(catalog, "t1", "html")
    # Only the warnings name it, as a quote that was not found.
    assert INVENTED not in md.split("## Warnings")[0] and INVENTED not in html.split('id="warnings"')[0]
    assert f"the quote “{INVENTED}” was not found" in md
    assert "(quote not found in the source)" in md
    model = published.report.model
    assert model.coreDrivers and all(INVENTED not in d.description for d in model.coreDrivers)
    assert all(d.evidence is None or d.evidence.verified for d in model.coreDrivers)
    rows = lake.dicts("SELECT * FROM report_citations WHERE quote = ?", [INVENTED])
    assert [(r["verified"], r["quote_start"], r["citation_number"]) for r in rows] == [(False, None, None)]


def test_the_catalog_is_free_while_the_model_is_called(settings, inbox, new_bundle, new_item):
    land(settings, inbox, new_bundle, new_item)
    probe = settings.model_copy(update={"lock_timeout": 0.5})
    seen: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        try:
            with open_catalog(probe, "analyst", read_only=True) as catalog:
                seen.append(f"free: {catalog.rows('known_tasks')}")
        except CatalogBusy:
            seen.append("busy")
        return httpx.Response(200, json=chat_completion("no JSON at all"))

    publish_report(settings, "t1", PLAN, llm=CONFIG, client=httpx.Client(transport=httpx.MockTransport(model)))
    assert seen and not [s for s in seen if s == "busy"]
