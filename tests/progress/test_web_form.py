"""The research form in a real browser (Debian's Chromium, driven by
Playwright): Ctrl+Enter in the question starts the run; ⌘+Enter, and Enter
in a one-line field, send the form too, while a plain Enter in the question
adds a line;
the library folders are a list with a line saying how to add one, and a
folder the server does not offer is refused in words."""

from __future__ import annotations

from tests.progress.web_helpers import RUN_PAGE, browser, fill_research_form, tabs, web  # noqa: F401 (fixtures)
from tests.research_helpers import QUESTION

from tasks.progress.web.launching import HOW_TO_OFFER_A_FOLDER

# what Chromium logs for a page answered with 400 (a refused form), and nothing else may be logged
REFUSED = "Failed to load resource: the server responded with a status of 400 (Bad Request)"


def test_control_enter_in_the_question_starts_the_run(prefect_engine, web, tabs):
    tab = tabs().open("/")
    fill_research_form(tab, web)
    tab.press("#question", "Control+Enter")
    tab.wait_for_url(RUN_PAGE, timeout=120_000)
    tab.wait_for_selector("#timeline[data-final]", timeout=180_000)  # the run ends before the server stops
    assert tab.get_attribute("#timeline", "data-final") == "complete"


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
