"""The research form and a run's timeline in a real browser (Debian's
Chromium, driven by Playwright): Ctrl+Enter in the question starts the run,
whose finished timeline reads in words; ⌘+Enter, and Enter in a one-line
field, send the form too, while a plain Enter in the question adds a line;
the library folders are a list with a line saying how to add one, and a
folder the server does not offer is refused in words."""

from __future__ import annotations

import re

from tests.server.web_helpers import RUN_PAGE, browser, fill_research_form, tabs, web  # noqa: F401 (fixtures)
from tests.research_helpers import QUESTION

from tasks.server.web.launching import HOW_TO_OFFER_A_FOLDER

# what Chromium logs for a page answered with 400 (a refused form), and nothing else may be logged
REFUSED = "Failed to load resource: the server responded with a status of 400 (Bad Request)"
# a stage's own field names (new_sources, failed_logged, …) have underscores; words do not
FIELD_NAME = re.compile(r"\w+_\w+")


def details(tab) -> dict[str, str]:
    """Each step's line under its label, by step."""
    return {li.get_attribute("data-step"): li.locator(".detail").inner_text()
            for li in tab.locator("#steps li").all()}


def test_control_enter_starts_the_run_and_its_finished_timeline_reads_in_words(prefect_engine, web, tabs):
    tab = tabs().open("/")
    fill_research_form(tab, web)
    tab.press("#question", "Control+Enter")
    tab.wait_for_url(RUN_PAGE, timeout=120_000)
    tab.wait_for_selector("#timeline[data-final]", timeout=180_000)
    assert tab.get_attribute("#timeline", "data-final") == "complete"
    task_id = tab.url.split("/tasks/", 1)[1].split("/", 1)[0]

    said = details(tab)
    assert said["plan"] == "1 query from the question's keywords"
    assert said["index"] == "library: 5 documents"  # not the folder the server indexed
    assert re.fullmatch(r"\d+ search(es)?", said["deep_search"])
    assert re.fullmatch(r"\d+ new sources?, \d+ in all", said["consolidate"])
    assert said["filter"] == "the kept sources come from 1 publisher"
    assert said["reporting"] == "the report is written: open it on the task page"
    assert tab.get_attribute("#steps li[data-step=reporting] .detail a", "href") == f"/tasks/{task_id}"
    checks = tab.locator("#gates li").all_inner_texts()
    assert checks[0].startswith("enough candidates found: yes") and checks[-1].startswith(
        "the selection's numbers agree: yes")
    shown = "\n".join([*said.values(), *checks])
    assert not FIELD_NAME.findall(shown), shown
    assert str(web.library) not in tab.locator("#timeline").inner_text()
    assert str(web.settings.home) not in tab.locator("#timeline").inner_text()

    # the last line says the run is complete, how long it took and when, and links the report
    last = tab.locator("#timeline > :last-child")
    assert last.get_attribute("id") == "report-link" and last.is_visible()
    assert re.fullmatch(r"Complete in \d+\.\d s, at .+\.\s*Open the report", last.inner_text()), last.inner_text()
    assert last.locator("a").get_attribute("href") == f"/tasks/{task_id}"


def test_meta_enter_and_enter_in_a_one_line_field_send_the_form(web, tabs):
    """Each send is refused for its target ('two'), which shows the form went
    without starting a run; a plain Enter in the question adds a line."""
    page = tabs()
    tab = page.open("/")
    tab.fill("#question", "first line")
    tab.press("#question", "Enter")
    assert tab.input_value("#question") == "first line\n"
    assert tab.url == web.url + "/"  # nothing was sent

    tab.click("details.options summary")
    tab.fill("#target", "two")
    refused = "target must be a whole number of sources, at least 1, not 'two'"
    for field, keys in (("#target", "Enter"), ("#library", "Enter"), ("#question", "Meta+Enter")):
        with tab.expect_navigation():
            tab.press(field, keys)
        assert tab.locator("p.error").inner_text() == refused, (field, keys)
        assert tab.input_value("#question") == "first line"  # the form comes back as sent
    assert page.errors == [REFUSED] * 3
    page.errors.clear()


def test_the_library_field_lists_the_offered_folders_and_says_how_to_add_one(web, tabs, tmp_path):
    page = tabs()
    tab = page.open("/")
    tab.click("details.options summary")
    offered = str(web.library.resolve())
    assert tab.locator("#library option").all_inner_texts() == ["the default library (Python's documentation)",
                                                               offered]
    assert tab.locator("#library-how").is_visible()
    assert tab.locator("#library-how").inner_text() == HOW_TO_OFFER_A_FOLDER

    # a folder the server does not offer (a page drawn before the server was started with other
    # folders) is refused in one line that names the folders it offers and how to add one
    elsewhere = str(tmp_path / "elsewhere")
    tab.eval_on_selector("#library option:last-child", "(option, folder) => { option.value = folder; }", elsewhere)
    tab.select_option("#library", elsewhere)
    tab.fill("#question", QUESTION)
    tab.click("button:has-text('Start research')")
    assert tab.locator("p.error").inner_text() == (
        f"library folder {elsewhere!r} is not a library this server offers; it offers the default library "
        f"(Python's documentation), {offered}. {HOW_TO_OFFER_A_FOLDER}")
    assert page.errors == [REFUSED]
    page.errors.clear()
