"""What a task's page offers besides reading: its report downloaded as
Markdown, HTML or JSON. In a real browser (Debian's Chromium) as a person
meets it, and over HTTP for what a browser does not show: the headers, the
refusals and the access rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tests.progress.web_helpers import browser, tabs, web  # noqa: F401 (fixtures)

from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.progress.serve import build_app
from tasks.reporting.report import load_report, publish_report

CHINESE_TASK = "r20261127-190603-刹车片多久换一次-75b2"
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


