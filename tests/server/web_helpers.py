"""What the page tests share: the app served for real on 127.0.0.1, a fake
OpenRouter on 127.0.0.1 (the network edge), and Debian's Chromium driven by
Playwright."""

from __future__ import annotations

import json
import re
import shutil
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION, write_library

from flows.launcher import ResearchLauncher
from tasks.common.settings import Settings
from tasks.server.serve import make_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def completion(content: str, citations: list[dict]) -> dict:
    """A chat completion as OpenRouter documents it (url_citation annotations)."""
    annotations = [{"type": "url_citation", "url_citation": c} for c in citations]
    return {"id": "gen-1", "object": "chat.completion", "model": "openai/gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content, "annotations": annotations}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120, "cost": 0.001}}


class FakeOpenRouter(ThreadingHTTPServer):
    """POST /api/v1/chat/completions answers the next queued completion;
    GET /page/N is a page a citation can point at."""

    daemon_threads = True

    def __init__(self):
        self.answers: list[dict] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenRouter

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(self.server.answers.pop(0)).encode()
        self._send(200, "application/json", body)

    def do_GET(self) -> None:  # noqa: N802
        number = self.path.rsplit("/", 1)[-1]
        self._send(200, "text/html", f"<!doctype html><title>page {number}</title><h1>Cited page {number}</h1>".encode())

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def fake_openrouter():
    server = FakeOpenRouter()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


# per module: a sync Playwright keeps an event loop running in this thread while it is open, and
# the Prefect flows tested after it start their own with asyncio.run
@pytest.fixture(scope="module")
def browser():
    if not shutil.which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make browser installs it)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Page:
    """A browser tab that records console errors (a CSP violation among them)."""

    def __init__(self, browser, base: str):
        self.context = browser.new_context(viewport={"width": 1100, "height": 900})
        self.tab = self.context.new_page()
        self.base = base
        self.errors: list[str] = []
        self.tab.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.tab.on("pageerror", lambda e: self.errors.append(str(e)))
        self.dialogs: list[str] = []
        self.tab.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path: str):
        self.tab.goto(self.base + path)
        return self.tab

    def close(self) -> None:
        self.context.close()


RUN_PAGE = re.compile(r"/tasks/[^/]+/runs/[^/#]+$")
TASK_PAGE = re.compile(r"/tasks/[^/]+$")


class Web:
    def __init__(self, server, router, library, settings):
        self.server, self.router, self.library, self.settings = server, router, library, settings

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture
def web(settings, monkeypatch, tmp_path):
    """`searchlake serve` with its launcher, a document library and a fake OpenRouter."""
    for name in PROVIDER_KEYS + BUDGET_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SEARCHLAKE_MAX_QUERIES_PER_INTENT", "1")
    library = write_library(tmp_path / "library")
    monkeypatch.setenv("SEARCHLAKE_SERVE_LIBRARIES", str(library))  # the page may search it
    with fake_openrouter() as router:
        monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-page-test")
        monkeypatch.setenv("OPENROUTER_BASE_URL", router.base + "/api/v1")
        config = Settings()
        with make_server(config, "127.0.0.1", 0, ResearchLauncher(config), poll=0.05) as server:
            yield Web(server, router, library, config)


@pytest.fixture
def tabs(browser, web):
    opened: list[Page] = []

    def new_tab() -> Page:
        opened.append(Page(browser, web.url))
        return opened[-1]

    yield new_tab
    for page in opened:
        assert page.errors == [], page.errors  # no CSP violation, no script error
        assert page.dialogs == []
        page.close()


def timeline(tab) -> list[tuple[str, str]]:
    return list(zip(tab.locator("#steps li .label").all_text_contents(),
                    tab.locator("#steps li .state").all_text_contents()))


def fill_research_form(tab, web: Web, question: str = QUESTION) -> None:
    """The research form as a person fills it: the library provider over the
    test library, 2 sources, and the question last (the cursor stays in it)."""
    tab.click("details.options summary")
    tab.check("input[name=providers][value=library]")
    tab.select_option("#library", str(web.library.resolve()))
    tab.fill("#target", "2")
    tab.fill("#question", question)
