"""The ResearchReport: markdown with numbered linked citations, the JSON
contract, the no-citation marker, and publishing to the lake + catalog."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from tests.report_helpers import PACKAGING, PLAN, make_sources

from tasks.common.untrusted_files import FileRefused
from tasks.lake.catalog import open_catalog
from tasks.lake.consolidation import UnknownTask, consolidate
from tasks.synthesis.extractive import extractive_synthesis
from tasks.lake.landing import land_files
from tasks.synthesis.modeling import build_blueprint
from tasks.reporting.html import render_html
from tasks.reporting.published import ReportUnreadable
from tasks.reporting.report import (
    ReportNotFound,
    build_report,
    load_report,
    publish_report,
    render_json,
    store_report,
)
from tasks.synthesis.synthesizer import synthesize

HOSTILE = "<script>document.title='pwned'</script> [x](javascript:alert(1))"


def report_of(sources, question=PLAN["question"], plan=PLAN):
    synthesis = synthesize(sources, question, plan)
    blueprint = build_blueprint(synthesis)
    return build_report(synthesis, blueprint, task_id="t1"), synthesis, blueprint


def test_markdown_numbers_citations_and_links_them_to_their_sources():
    report, synthesis, _ = report_of(make_sources())
    md = report.markdown
    assert md.startswith(f"# {PLAN['question']}\n")
    for heading in ("## Answer", "## Evidence", "### build backend", "## Contradictions and gaps",
                    "## Model", "## Sources"):
        assert heading in md
    by_note = {s.noteIndex: s for s in report.sources}
    assert sorted(by_note) == list(range(1, len(by_note) + 1))
    cited = re.findall(r"\[\\\[(\d+)\\\]\]\((\S+?)\)", md)
    assert cited
    for note, url in cited:
        assert by_note[int(note)].url == url  # [n] links to the n-th source
    for source in report.sources:
        assert f"{source.noteIndex}. [{source.title}]({source.url}) — {source.domain}" in md
    # Notes are numbered by first appearance.
    first_seen = list(dict.fromkeys(int(n) for n, _ in cited))
    assert first_seen == sorted(first_seen)
    assert "No citations" not in md


def test_markdown_escapes_untrusted_titles_and_quotes():
    sources = make_sources([("https://evil.example.com/a", HOSTILE,
                             f"The build backend is configured here {HOSTILE} in the [build-system] table.")])
    report, _, _ = report_of(sources)
    assert "<script>" not in report.markdown
    assert r"\<script\>" in report.markdown
    assert "](javascript:" not in report.markdown.replace(r"\]", "")


def test_json_follows_the_research_report_contract():
    report, synthesis, blueprint = report_of(make_sources())
    doc = json.loads(render_json(report))
    assert {"markdown", "outline", "sources", "metadata"} <= set(doc)
    assert doc["markdown"] == report.markdown
    assert all({"heading", "bullets"} <= set(o) for o in doc["outline"])
    assert doc["outline"][0]["heading"] == "Answer"
    assert all({"title", "url", "noteIndex"} <= set(s) for s in doc["sources"])
    meta = doc["metadata"]
    assert {"durationMs", "tokens", "streamed"} <= set(meta) and meta["streamed"] is False
    assert meta["durationMs"] >= 0 and meta["tokens"] == 0
    assert set(meta["stepDurationsMs"]) == {"synthesis", "modeling", "reporting"}
    assert meta["citationCount"] == len(synthesis.all_citations()) and meta["unverifiedCount"] == 0
    assert meta["noCitations"] is False and meta["taskId"] == "t1" and meta["language"] == "en"
    assert doc["synthesis"]["answer"] and doc["synthesis"]["synthesized_insights"] and doc["model"]["coreDrivers"]


def test_chinese_question_gives_chinese_headings():
    sources = make_sources([("https://zh.example.cn/a", "报告", "大语言模型在医疗诊断中的应用正在快速增长。")])
    report, _, _ = report_of(sources, "大语言模型在医疗诊断中的应用如何？",
                             {"search_summary": {"key_dimensions": ["医疗诊断", "监管政策"]}})
    for heading in ("## 回答", "## 证据", "### 医疗诊断", "## 矛盾与空白", "## 来源"):
        assert heading in report.markdown
    assert "未找到关于“监管政策”的证据" in report.markdown
    assert report.outline[0].heading == "回答" and report.metadata.language == "zh"
    assert '<html lang="zh-CN">' in render_html(report)


def test_no_citations_is_marked_clearly():
    report, synthesis, _ = report_of([])
    assert report.sources == [] and report.metadata.noCitations is True
    assert "> **No citations" in report.markdown
    assert "No sources were found" in report.markdown
    assert report.outline[-1].bullets[0].startswith("No citations")
    html = render_html(report)
    assert 'id="no-citations"' in html


def test_unverified_citation_is_marked_and_never_shown_as_evidence_in_any_format():
    sources = make_sources()
    synthesis = extractive_synthesis(sources, PLAN["question"], PLAN)
    only = [i for i in [*synthesis.answer, *synthesis.synthesized_insights] if i.citations[0].source_id == "src3"]
    for insight in only:
        insight.citations[0].verified = False
        insight.citations[0].quote = "Hatch invented the wheel."
    synthesis.key_data_points = []
    report = build_report(synthesis, None)
    assert report.metadata.unverifiedCount == len(only) > 0
    assert "(quote not found in the source)" in report.markdown
    assert "Hatch invented the wheel" not in report.markdown
    # A source cited only by unverified quotes is not a numbered source.
    assert "src3" not in {s.sourceId for s in report.sources}
    html = render_html(report)
    assert 'data-verified="false"' in html and "Hatch invented the wheel" not in html


# -- publishing -------------------------------------------------------------------

def _land(settings, inbox, new_bundle, new_item, task="t1"):
    items = [new_item(url, 0.9 - i / 10, title=title, content_text=text) for i, (url, title, text) in enumerate(PACKAGING)]
    inbox.write(new_bundle("q1", items, task_id=task, query_text="pyproject build backend metadata"))
    with open_catalog(settings) as catalog:
        land_files(catalog, [inbox.folder])
        consolidate(catalog, task)


def test_publish_lands_three_files_and_one_reports_row(settings, lake, inbox, new_bundle, new_item):
    _land(settings, inbox, new_bundle, new_item)
    published = publish_report(settings, "t1", PLAN)
    keys = published.keys
    with open_catalog(settings, read_only=True) as catalog:
        folder = keys["md"].rsplit("/", 1)[0]
        assert folder.startswith("reports/task_id=t1/report_id=")
        assert keys == {"md": f"{folder}/report.md", "html": f"{folder}/report.html", "json": f"{folder}/report.json"}
        assert load_report(catalog, "t1", "md") == published.report.markdown
        assert json.loads(load_report(catalog, "t1", "json"))["markdown"] == published.report.markdown
        assert load_report(catalog, "t1", "html").startswith("<!DOCTYPE html>")
    assert set(lake.files_under("reports/")) == set(keys.values())
    row = lake.dicts("SELECT * FROM reports WHERE task_id = 't1'")[0]
    synthesis = published.report.synthesis
    assert row["question"] == PLAN["question"] and row["language"] == "en" and row["synthesizer"] == "extractive"
    assert row["source_count"] == 3 and row["cited_source_count"] == len(published.report.sources)
    # one count everywhere: the report_citations rows (the model's evidence among them), the history's commit
    assert row["citation_count"] == lake.count("report_citations") > len(synthesis.all_citations()) > 0
    assert row["unverified_count"] == 0
    assert lake.rows("SELECT count(*) FROM report_citations WHERE section = 'model'") == [
        (row["citation_count"] - len(synthesis.all_citations()),)]
    assert row["insight_count"] == len(synthesis.synthesized_insights)
    assert (row["md_path"], row["html_path"], row["json_path"]) == (keys["md"], keys["html"], keys["json"])
    assert row["duration_ms"] >= 0 and row["tokens"] == 0 and row["generated_at"] is not None

    # Publishing again replaces the files and the row.
    again = publish_report(settings, "t1", None, question="Which build backend reads the table?")
    rows = lake.dicts("SELECT question FROM reports")
    assert rows == [{"question": "Which build backend reads the table?"}]
    assert set(lake.files_under("reports/")) == set(again.keys.values())
    with open_catalog(settings, read_only=True) as catalog:
        assert load_report(catalog, "t1", "md").startswith("# Which build backend reads the table?")


def test_publish_is_atomic_when_the_catalog_write_fails(settings, lake, monkeypatch):
    report, synthesis, blueprint = report_of(make_sources())
    with open_catalog(settings) as catalog:
        real_run = catalog.run

        def failing_run(name, params=None):
            if name == "report_insert":
                raise RuntimeError("disk full")
            return real_run(name, params)

        monkeypatch.setattr(catalog, "run", failing_run)
        with pytest.raises(RuntimeError, match="disk full"):
            store_report(catalog, "t1", report, synthesis, blueprint)
        monkeypatch.undo()
        assert catalog.rows("report_paths", ["t1"]) == []
    assert lake.files_under("reports/") == []
    assert lake.count("reports") == 0


def test_load_report_errors_are_clear(settings):
    with open_catalog(settings) as catalog:
        with pytest.raises(ReportNotFound, match="no report has been published for task 'zz'"):
            load_report(catalog, "zz", "md")
        with pytest.raises(ValueError, match="use md, html or json"):
            load_report(catalog, "zz", "pdf")
    assert issubclass(ReportNotFound, UnknownTask)  # the CLI already prints UnknownTask as one line


def test_a_report_file_swapped_in_the_lake_is_refused_in_one_line_and_never_followed(
        settings, lake, inbox, new_bundle, new_item, cli, tmp_path):
    """The catalog names the report's files; anyone who can write the lake's
    folder can put a link, a FIFO or other bytes in their place. `report`
    says so in one line, quotes nothing of what is there, and never hangs."""
    _land(settings, inbox, new_bundle, new_item)
    keys = publish_report(settings, "t1", PLAN).keys
    secret = tmp_path / "secret.txt"
    secret.write_text("API_KEY=sk-not-for-you")
    files = {fmt: Path(settings.lake_root, key) for fmt, key in keys.items()}
    files["md"].unlink()
    files["md"].symlink_to(secret)
    files["html"].unlink()
    os.mkfifo(files["html"])  # a reader following it would wait forever
    files["json"].write_bytes(b"\xff\xfe not text")

    expected = {"md": "a link to a file outside the folder", "html": "not a regular file (a FIFO)",
                "json": "it is not UTF-8 text"}
    with open_catalog(settings, read_only=True) as catalog:
        for fmt, why in expected.items():
            with pytest.raises(ReportUnreadable) as refused:
                load_report(catalog, "t1", fmt)
            assert str(refused.value) == f"the {fmt} report of task 't1' in the lake cannot be read: {why}"
        with open(files["json"], "r+b") as huge:  # sparse: 100 GB that take no disk
            huge.truncate(100 * 1024 ** 3)
        with pytest.raises(ReportUnreadable, match=r"too large \(107,374,182,400 bytes; limit 67,108,864\)"):
            load_report(catalog, "t1", "json")
        files["json"].write_bytes(b"\xff\xfe not text")
        for key in ("../secret.txt", str(secret), "reports/\0", None):  # what a planted catalog row may name
            with pytest.raises(FileRefused, match="not a path below the folder"):
                catalog.lake.read_bytes(key)
    for fmt, why in expected.items():
        done = cli.run("report", "--task-id", "t1", "--format", fmt, timeout=30)
        assert done.returncode != 0 and "sk-not-for-you" not in done.stdout + done.stderr
        assert why in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_publish_with_a_hand_built_report_still_embeds_its_evidence(settings):
    synthesis = extractive_synthesis(make_sources(), PLAN["question"], PLAN)
    report = build_report(synthesis, None).model_copy(update={"synthesis": None})
    with open_catalog(settings) as catalog:
        store_report(catalog, "t2", report, synthesis, None)
        doc = json.loads(load_report(catalog, "t2", "json"))
    assert doc["synthesis"]["question"] == PLAN["question"]


# -- what a document cannot do to a reader --------------------------------------------

RLO, RED = "\u202e", "\x1b[31m"  # right-to-left override ("\u202egnp.exe" shows as "exe.png"); a colour escape
TRICKS = (RLO, RED, "\x1b", "\u2066", "\u200f", "\x07")
TRICKY_DOCS = {
    "backends.md": f"# {RLO}gnp.exe build backends\n\nThe build backend {RED}reads the [build-system] table"
                   f"{RLO} first, before the \u2066project\u2069 table.\u200f Hatchling is a build backend.\x07\n",
    "metadata.md": "# Project metadata\n\nThe [project] table holds the name and version of a project.\n",
}


def test_a_documents_control_and_bidi_characters_reach_no_reader(settings, tmp_path):
    from schemas.plan import PlannedQuery, ResearchPlan, SearchSummary
    from schemas.report import ResearchReport
    from tasks.common.settings import Settings
    from tasks.lake.landing import land_bundles
    from tasks.server.serve import build_app
    from tasks.reporting.terminal import answer_lines
    from tasks.retrieval.providers.registry import build_provider, provider_class
    from tasks.retrieval.search import route, search_bundle
    from starlette.testclient import TestClient

    library = tmp_path / "docs"
    library.mkdir()
    for name, text in TRICKY_DOCS.items():
        (library / name).write_text(text, encoding="utf-8")
    config = Settings(home=settings.home, library=library)
    question = "Which build backend reads the build-system table?"
    plan = ResearchPlan(question=question, planner="keywords", search_summary=SearchSummary(interpreted_topic="x"),
                        queries=[PlannedQuery(intent="library", text=question)])
    provider = build_provider("library", config)
    bundles = [search_bundle(provider, call, task_id="t1", max_results=5, settings=config)
               for call in route(plan, {"library": provider_class("library")})]
    with open_catalog(config) as catalog:
        land_bundles(catalog, bundles, source="research")
        consolidate(catalog, "t1")
    publish_report(config, "t1", question=question)

    with open_catalog(config, read_only=True) as catalog:
        shown = {fmt: load_report(catalog, "t1", fmt) for fmt in ("md", "html")}
        stored = ResearchReport.model_validate_json(load_report(catalog, "t1", "json"))
        texts = dict(catalog.con.execute("SELECT source_id, content_text FROM consolidated").fetchall())
    shown["terminal"] = "\n".join(answer_lines(stored))
    with TestClient(build_app(config), base_url="http://127.0.0.1") as page:
        shown["page"] = page.get("/tasks/t1").text

    for where, text in shown.items():
        assert not [trick for trick in TRICKS if trick in text], where
    assert "gnp.exe build backends" in shown["md"] and "gnp.exe build backends" in shown["html"]
    assert "reads the \\[build-system\\] table first" in shown["md"]  # what the quote says, still quoted
    # The stored text and the quotes keep every character: a quote is its source's text at its offsets.
    citations = [c for c in stored.synthesis.all_citations() if c.verified]
    assert any(RLO in c.quote or RED in c.quote for c in citations)
    assert all(texts[c.source_id][c.start:c.end] == c.quote for c in citations)


def test_a_report_published_again_reads_no_passage_anew(settings, lake, inbox, new_bundle, new_item,
                                                         sentence_model_reads):
    """The sentence model's vectors are kept in the home: the same task's
    report, published again by another process, reads none of its passages
    with the model again."""
    import sqlite3

    read, forget = sentence_model_reads
    _land(settings, inbox, new_bundle, new_item)
    first = publish_report(settings, "t1", PLAN)
    with sqlite3.connect(settings.sentence_vectors_path) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] > 0
    forget()  # as in a new process
    read.clear()
    again = publish_report(settings, "t1", PLAN)
    assert read == []
    assert again.report.synthesis.answer == first.report.synthesis.answer
