"""What the page tests share: the app served for real on 127.0.0.1, a fake
OpenRouter on 127.0.0.1 (the network edge), and Debian's Chromium driven by
Playwright."""

from __future__ import annotations

import json
import shutil
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

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
