"""What a task's page offers besides reading: its report downloaded as
Markdown, HTML or JSON, and "Ask again", which starts the same question as a
new task with the library folder, providers and target its latest run was
asked with. In a real browser (Debian's Chromium) as a person meets them,
and over HTTP for what a browser does not show: the headers, the refusals
and the access rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tests.server.test_serve_input import Recorder
from tests.server.web_helpers import (RUN_PAGE, browser, fill_research_form, tabs,  # noqa: F401 (fixtures)
                                        web)
from tests.research_helpers import QUESTION

from flows.run_view import RunView
from tasks.common.settings import Settings
from tasks.records.runs import run_started
from tasks.lake.catalog import open_catalog
from tasks.server.serve import build_app
from tasks.server.web.pages import AskedBefore, asked_before
from tasks.reporting.report import load_report, publish_report

CHINESE_TASK = "r20261127-190603-刹车片多久换一次-75b2"
PAGE = {"Origin": "http://127.0.0.1"}  # what the page's own forms send
TOKEN = "a-long-random-token-for-the-download-tests"


@pytest.fixture
def reported(lake, inbox, new_bundle, new_item):
    """Publish a report for a task: its bundle landed and consolidated, its report written from it."""
    def publish(task_id: str) -> str:
        inbox.write(new_bundle("q1", [new_item(f"https://example.org/{n}", 0.9 - n / 10,
                                               snippet="Brake pads last about 50,000 km.") for n in range(3)],
                               task_id=task_id))
        lake.ingest(inbox.folder)
        lake.consolidate(task_id)
        publish_report(lake.settings, task_id, question="刹车片多久换一次?")
        return task_id
    return publish


def stored(settings: Settings, task_id: str, fmt: str) -> str:
    with open_catalog(settings, read_only=True) as catalog:
        return load_report(catalog, task_id, fmt)


def begun_run(settings: Settings, task_id: str, trace_id: str, **request) -> None:
    """A run as the research flow begins it: its runs row and what it was asked with."""
    asked = {"library": None, "providers": None, "target": None, **request}
    RunView(settings, task_id, trace_id).begin(["task id: " + task_id], run_started(
        trace_id, task_id, QUESTION, "default", "default", settings.budget()), asked)


# -- in the browser ------------------------------------------------------------------

def test_the_report_downloads_in_three_formats_under_the_task_id(web, tabs, reported):
    task_id = reported(CHINESE_TASK)
    tab = tabs().open(f"/tasks/{task_id}")
    links = tab.locator(".downloads a")
    assert links.all_inner_texts() == ["Markdown", "HTML", "JSON"]
    for fmt, name in (("md", "Markdown"), ("html", "HTML"), ("json", "JSON")):
        with tab.expect_download() as download:
            tab.click(f".downloads a:has-text('{name}')")
        assert download.value.suggested_filename == f"{task_id}.{fmt}"
        assert Path(download.value.path()).read_text(encoding="utf-8") == stored(web.settings, task_id, fmt)


def test_ask_again_starts_the_same_question_as_a_new_task(prefect_engine, web, tabs):
    tab = tabs().open("/")
    fill_research_form(tab, web)
    tab.click("button:has-text('Start research')")
    tab.wait_for_url(RUN_PAGE, timeout=120_000)
    tab.wait_for_selector("#timeline[data-final=complete]", timeout=180_000)
    first = tab.url.split("/tasks/", 1)[1].split("/", 1)[0]

    tab.click("#report-link a")
    folder = str(web.library.resolve())
    assert tab.locator("form.again .quiet").inner_text() == (f"the same question as a new task, searching afresh: "
                                                             f"folder {folder} · providers library · 2 sources")
    tab.click("button:has-text('Ask again')")
    tab.wait_for_url(RUN_PAGE, timeout=120_000)
    again = tab.url.split("/tasks/", 1)[1].split("/", 1)[0]
    assert again != first  # a new task: the old one's searches would only be resumed
    tab.wait_for_selector("#timeline[data-final=complete]", timeout=180_000)
    assert asked_before(web.settings, again) == AskedBefore(QUESTION, folder, ["library"], 2)
    tab.click("#report-link a")
    assert tab.locator("h1").inner_text() == QUESTION


# -- over HTTP -----------------------------------------------------------------------

@pytest.mark.parametrize("fmt, kind", [("md", "text/markdown; charset=utf-8"), ("html", "text/html; charset=utf-8"),
                                       ("json", "application/json")])
def test_a_download_says_what_it_is_and_names_the_file_in_utf8_with_an_ascii_fallback(settings, reported, fmt,
                                                                                      kind):
    task_id = reported(CHINESE_TASK)
    with TestClient(build_app(settings), base_url="http://127.0.0.1") as client:
        answer = client.get(f"/tasks/{task_id}/report.{fmt}")
    assert answer.status_code == 200 and answer.text == stored(settings, task_id, fmt)
    assert answer.headers["content-type"] == kind
    assert answer.headers["content-disposition"] == (
        f'attachment; filename="r20261127-190603-________-75b2.{fmt}"; '
        f"filename*=UTF-8''r20261127-190603-%E5%88%B9%E8%BD%A6%E7%89%87%E5%A4%9A%E4%B9%85%E6%8D%A2%E4%B8%80%E6%AC%A1"
        f"-75b2.{fmt}")


def test_a_download_of_nothing_is_a_404_in_one_line(settings, lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://example.org/a")], task_id="unreported"))
    lake.ingest(inbox.folder)
    with TestClient(build_app(settings), base_url="http://127.0.0.1") as client:
        answers = {path: client.get(path) for path in ("/tasks/nowhere/report.md", "/tasks/unreported/report.html",
                                                       "/tasks/unreported/report.pdf")}
    assert {path: (a.status_code, a.text) for path, a in answers.items()} == {
        "/tasks/nowhere/report.md": (404, "nothing in the lake names task nowhere"),
        "/tasks/unreported/report.html": (404, "no report has been published for task 'unreported'"),
        "/tasks/unreported/report.pdf": (404, "no report format 'pdf': use md, html or json"),
    }


def test_a_download_needs_the_token_as_the_task_page_does(settings, reported, monkeypatch):
    task_id = reported("t1")
    monkeypatch.setenv("SEARCHLAKE_SERVE_TOKEN", TOKEN)
    with TestClient(build_app(Settings()), base_url="http://127.0.0.1") as client:
        for path in ("/tasks/t1", f"/tasks/{task_id}/report.md"):
            assert client.get(path).status_code == 401
            assert client.get(path, headers={"Accept": "text/html"}, follow_redirects=False).headers[
                "location"].startswith("/login?next=")
            assert client.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_ask_again_starts_a_new_task_with_what_the_latest_run_was_asked(settings, tmp_path, monkeypatch):
    folder = tmp_path / "notes"
    folder.mkdir()
    monkeypatch.setenv("SEARCHLAKE_SERVE_LIBRARIES", str(folder))
    config = Settings()
    begun_run(config, "t1", "older", target=9)
    begun_run(config, "t1", "latest", library=str(folder), providers=["library"], target=3)
    recorder = Recorder()
    with TestClient(build_app(config, recorder), base_url="http://127.0.0.1", headers=PAGE) as client:
        page = client.get("/tasks/t1")
        answer = client.post("/tasks/t1/again", follow_redirects=False)
    assert "Ask again" in page.text
    assert answer.status_code == 303 and answer.headers["location"] == "/tasks/t-started/live"
    [request] = recorder.started
    assert (request.question, request.library, request.providers, request.target, request.task_id) == (
        QUESTION, str(folder.resolve()), ["library"], 3, None)  # task_id None: the launcher gives a new one


def test_ask_again_refuses_a_folder_no_longer_offered_other_sites_and_tasks_without_a_run(
        settings, tmp_path, lake, inbox, new_bundle, new_item):
    begun_run(settings, "t1", "latest", library=str(tmp_path / "since-unlisted"))
    inbox.write(new_bundle("q1", [new_item("https://example.org/a")], task_id="landed-only"))
    lake.ingest(inbox.folder)
    recorder = Recorder()
    with TestClient(build_app(settings, recorder), base_url="http://127.0.0.1", headers=PAGE) as client:
        unlisted = client.post("/tasks/t1/again")
        cross_site = client.post("/tasks/t1/again", headers={"Origin": "http://evil.example"})
        no_run = client.post("/tasks/landed-only/again")
        unknown = client.post("/tasks/nowhere/again")
    assert unlisted.status_code == 400
    error = re.search(r'<p class="error" role="alert">(.*?)</p>', unlisted.text)[1]
    assert error.startswith("library folder &#39;") and "is not a library this server offers; it offers" in error
    assert cross_site.status_code == 403
    assert no_run.status_code == 400 and "task landed-only has no research run to ask again" in no_run.text
    assert unknown.status_code == 404 and "nothing in the lake names task nowhere" in unknown.text
    assert recorder.started == []
