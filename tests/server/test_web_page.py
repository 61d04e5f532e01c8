"""The web page of `searchlake serve` in a real browser (Debian's Chromium,
driven by Playwright): start a research from the form and watch its timeline
reach complete, read the report and follow a citation chip, see the "no
citations" marker, follow a run live from two tabs and after a reload, a
hostile source title that stays text, and the fonts Chinese text falls back to. The server, the research flow (real
Prefect engine), the lake and the ask client are the real code; OpenRouter is
a fake on 127.0.0.1."""

from __future__ import annotations

import re

from tests.server.web_helpers import (RUN_PAGE, TASK_PAGE, Page, browser, completion,  # noqa: F401 (fixtures)
                                        fill_research_form, tabs, timeline, web)
from tests.research_helpers import QUESTION

from flows.run_view import STEPS
from tasks.common.settings import Settings
from tasks.server.events import EventLog, ProgressTracker
from tasks.server.serve import make_server


def test_research_from_the_form_to_the_report_and_a_citation(prefect_engine, web, tabs):
    tab = tabs().open("/")
    fill_research_form(tab, web)
    tab.click("button:has-text('Start research')")

    tab.wait_for_url(RUN_PAGE, timeout=120_000)  # the starting page moves on by itself
    tab.wait_for_selector("#timeline[data-final]", timeout=180_000)
    assert tab.get_attribute("#timeline", "data-final") == "complete"
    steps = timeline(tab)
    assert [label for label, _ in steps] == ["planning queries", "indexing the library", "searching in parallel",
                                             "deduplicating and ranking", "filtering for quality",
                                             "writing the report"]
    assert {state for _, state in steps} == {"complete"}
    assert tab.locator("#run-status").inner_text() == "complete"
    assert tab.locator("#gates li[data-gate=output_check]").inner_text().startswith("the selection's numbers agree: yes")

    # a second tab opened on the same run sees the same timeline
    other = tabs().open(tab.url.removeprefix(web.url))
    other.wait_for_selector("#timeline[data-final=complete]")
    assert timeline(other) == steps
    assert other.locator("#gates li").all_text_contents() == tab.locator("#gates li").all_text_contents()

    tab.click("text=Open the report")
    tab.wait_for_url(TASK_PAGE)
    assert tab.locator("h1").inner_text() == QUESTION
    assert tab.locator("ul.summary li").count() >= 1
    chip = tab.locator("ol.insights a.chip").first
    number, domain, title = (chip.locator(s).inner_text() for s in (".n", ".d", ".t"))
    assert number.isdigit() and domain and title  # number, domain and title are visible text
    assert chip.locator(".t").is_visible()
    chip.click()
    assert tab.url.endswith(f"#source-{number}")
    cited = tab.locator(f"#source-{number}")
    assert cited.is_visible() and title in cited.inner_text() and "final " in cited.inner_text()
    # the sources with their scores, what the filters dropped, and the charts
    assert tab.locator("table.sources-table tbody tr").count() >= 2
    assert "What the filters dropped" in tab.locator("body").inner_text()
    assert tab.locator("figure.chart svg").count() >= 3
    assert "library" in tab.locator("figure.chart").nth(2).inner_text()  # latency per provider

    # the runs list on the start page shows the run with its counts
    home = tabs().open("/")
    row = home.locator("table.runs tbody tr").first
    assert "complete" in row.inner_text() and "default" in row.inner_text()


def test_an_answer_without_citations_shows_the_marker(web, tabs):
    web.router.answers.append(completion("DuckDB is an in-process database.", []))
    tab = tabs().open("/")
    tab.fill("#ask-question", "What is DuckDB?")
    tab.click("button:has-text('Ask')")
    tab.wait_for_url(TASK_PAGE)
    marker = tab.locator(".answer .no-citations")
    assert marker.is_visible() and marker.inner_text().startswith("No citations")
    assert tab.locator(".answer-text").inner_text() == "DuckDB is an in-process database."
    assert tab.locator(".answer a.chip").count() == 0


def test_an_answers_citation_chip_opens_the_cited_page(web, tabs):
    page_url = web.router.base + "/page/1"
    web.router.answers.append(completion("DuckDB reads Parquet files directly.",
                                         [{"url": page_url, "title": "Reading Parquet", "start_index": 0,
                                           "end_index": 12}]))
    tab = tabs().open("/")
    tab.fill("#ask-question", "Can DuckDB read Parquet?")
    tab.click("button:has-text('Ask')")
    tab.wait_for_url(TASK_PAGE)
    assert tab.locator(".answer .no-citations").count() == 0
    chip = tab.locator(".answer a.chip").first
    assert [chip.locator(s).inner_text() for s in (".n", ".d", ".t")] == ["1", "127.0.0.1", "Reading Parquet"]
    chip.click()
    tab.wait_for_url(page_url)
    assert tab.locator("h1").inner_text() == "Cited page 1"


def test_a_reloaded_page_and_a_second_tab_catch_up_and_follow_live(web, tabs):
    log = EventLog.for_run(web.settings, "t1", "live-run")
    tracker = ProgressTracker(STEPS, sink=log)
    tracker.begin({"plan": ["task id: t1"]})
    tracker.start("plan")
    tracker.complete("plan", metadata={"queries": 3})
    tracker.start("deep_search")
    tracker.advance("deep_search", 0.5, metadata={"provider": "library", "query_id": "q1.library", "items": 4,
                                                  "failed": False, "done": 1, "total": 2})
    first = tabs().open("/tasks/t1/runs/live-run")
    first.wait_for_selector("#steps li[data-step=deep_search].progress")
    first.reload()
    first.wait_for_selector("#steps li[data-step=deep_search].progress")
    assert timeline(first) == [("planning queries", "complete"), ("searching in parallel", "progress")]
    assert first.locator("#steps li[data-step=deep_search] .detail").inner_text() == "search 1 of 2: library found 4 results"
    second = tabs().open("/tasks/t1/runs/live-run")
    second.wait_for_selector("#steps li[data-step=deep_search].progress")

    # the run goes on while both tabs watch
    tracker.advance("deep_search", 1.0, chunk="streamed text", metadata={"done": 2, "total": 2})
    tracker.complete("deep_search")
    tracker.note("consolidate", {"gate": "search_completeness", "outcome": "warn", "reason": "7 candidates"})
    tracker.finish({"selected": 2})
    log.close()
    for tab in (first, second):
        tab.wait_for_selector("#timeline[data-final=complete]")
        assert tab.locator("#steps li[data-step=deep_search] pre.stream").inner_text() == "streamed text"
        assert (tab.locator("#gates li.warn").inner_text()
                == "enough candidates found: yes, with a warning — 7 candidates")
        assert tab.locator("#report-link").is_visible()
        assert tab.eval_on_selector("#overall", "e => e.value") == 1


def test_a_script_in_a_source_title_stays_text(web, tabs, lake, inbox, new_bundle, new_item):
    hostile = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
    inbox.write(new_bundle("q1", [new_item("https://evil.example/a", 0.9, title=hostile,
                                           snippet="<b>bold?</b>")], task_id="xss"))
    lake.ingest(inbox.folder)
    lake.consolidate("xss")
    tab = tabs().open("/tasks/xss")
    cell = tab.locator("table.sources-table tbody tr").first
    assert hostile in cell.inner_text()
    assert tab.locator("table.sources-table img, table.sources-table script").count() == 0
    assert tab.title() != "pwned"
    header = tab.context.request.get(web.url + "/tasks/xss").headers["content-security-policy"]
    assert "script-src 'self'" in header and "unsafe-inline" not in header


def test_a_browser_gives_the_token_once_and_then_watches_a_run(browser, settings, monkeypatch):
    """With SEARCHLAKE_SERVE_TOKEN set, the page asks for it once; its cookie
    then carries the page, its refreshes and the run's event stream."""
    monkeypatch.setenv("SEARCHLAKE_SERVE_TOKEN", "a-token-for-the-page-test")
    config = Settings()
    with EventLog.for_run(config, "t1", "watched") as log:
        tracker = ProgressTracker(STEPS, sink=log)
        tracker.begin()
        tracker.finish({"selected": 1})
    with make_server(config, "127.0.0.1", 0, poll=0.05) as server:
        page = Page(browser, server.url)
        try:
            tab = page.open("/tasks/t1/runs/watched")
            tab.wait_for_url(re.compile(r"/login\?next="))
            tab.fill("#token", "not-the-token")
            tab.click("button:has-text('Open')")
            assert "that is not this server's token" in tab.locator("p.error").inner_text()
            tab.fill("#token", "a-token-for-the-page-test")
            tab.click("button:has-text('Open')")
            tab.wait_for_url(re.compile(r"/tasks/t1/runs/watched$"))
            tab.wait_for_selector("#timeline[data-final=complete]")
            # the browser logs the wrong token's 401, and nothing else: no CSP violation, no failed stream
            assert page.errors == ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
        finally:
            page.close()


def test_chinese_text_falls_back_to_a_cjk_font_after_the_latin_ones(web, tabs):
    tab = tabs().open("/")
    fonts = [name.strip().strip('"') for name in tab.eval_on_selector("body", "e => getComputedStyle(e).fontFamily")
             .split(",")]
    assert fonts.index("Roboto") < fonts.index("Noto Sans CJK SC")
    assert fonts[fonts.index("Noto Sans CJK SC"):] == ["Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC",
                                                       "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei",
                                                       "WenQuanYi Micro Hei", "sans-serif"]
