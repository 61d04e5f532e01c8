"""Makes the manual's screenshots of the web page (docs/page-*.png, shown in
docs/web.md): one research run of the default question over the default
library (Python's documentation), then `searchlake serve` photographed in
Debian's headless Chromium.

    .venv/bin/python docs/screenshots.py      # or: make docs-screenshots

Everything happens in a temporary home that is removed afterwards, offline:
no provider key is passed on, so the run searches the library alone."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
QUESTION = "How does Python's garbage collector handle reference cycles?"
# The browser the page tests use: Debian's package, never a download.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WIDTH = 1200
# The task page is long: its picture of the answer is cut at this height.
MAX_HEIGHT = 1600
# Settings of the person running this that would change what the run does.
FOREIGN = re.compile(r"^(SEARCHLAKE_|PREFECT_|PIPELINE_|OPENROUTER_)|_API_KEY$|_TOKEN$|^SEARXNG_URL$")


def private_env(work: Path) -> dict[str, str]:
    """The environment of a first-time user: a fresh lake and Prefect home,
    no provider keys, no background server, no analytics."""
    env = {k: v for k, v in os.environ.items() if not FOREIGN.search(k)}
    (work / "prefect").mkdir()
    env.update(SEARCHLAKE_HOME=str(work / "home"), PREFECT_HOME=str(work / "prefect"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", SEARCHLAKE_AUTOSERVE="false",
               PYTHONPATH=str(ROOT))
    return env


def searchlake(*args: str) -> list[str]:
    # this checkout's code, whatever an installed searchlake points at
    return [sys.executable, "-m", "flows.cli", *args]


def research(env: dict[str, str], work: Path) -> None:
    # run in the temporary folder: a .env of the checkout stays out of it
    done = subprocess.run(searchlake("research", QUESTION, "--here"), cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"the research run failed:\n{done.stderr}")


def start_serve(env: dict[str, str], work: Path) -> subprocess.Popen:
    """`searchlake serve` on a free port, in a process group of its own. Its
    output goes to a file, so a chatty server never blocks on a full pipe."""
    with (work / "serve.log").open("w") as out:
        return subprocess.Popen(searchlake("serve", "--host", "127.0.0.1", "--port", "0"), cwd=work,
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def url_of(server: subprocess.Popen, work: Path) -> str:
    # its first line names the port it picked: "searchlake on http://127.0.0.1:PORT/"
    log = work / "serve.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(r"searchlake on (http://127\.0\.0\.1:\d+)/", log.read_text())
        if found:
            return found[1]
        if server.poll() is not None:
            break
        time.sleep(0.2)
    sys.exit(f"searchlake serve did not start:\n{log.read_text()}")


def stop(server: subprocess.Popen) -> None:
    """SIGTERM lets serve shut down and remove its record from the home;
    whatever is left of its process group is then killed."""
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def shoot(tab, name: str, top: float = 0, bottom: float | None = None) -> None:
    """The page from `top` to `bottom` (default: its end) as docs/<name>."""
    height = tab.evaluate("document.documentElement.scrollHeight")
    bottom = height if bottom is None else bottom
    tab.screenshot(path=DOCS / name, full_page=True,
                   clip={"x": 0, "y": top, "width": WIDTH, "height": bottom - top})
    print(f"docs/{name}: {WIDTH} x {round(bottom - top)}")


def places(tab, selector: str) -> list[tuple[float, float]]:
    """Where each element matching `selector` starts and ends, in page pixels."""
    return tab.eval_on_selector_all(selector, """found => found.map(element => {
        const box = element.getBoundingClientRect();
        return [box.top + window.scrollY, box.bottom + window.scrollY];
    })""")


def home_page(tab, base: str) -> tuple[str, str]:
    """The start page with the options open (providers, library folders, the
    line on how to offer another); answers the run's and the task's paths."""
    tab.goto(base + "/")
    tab.click("details.options summary")
    tab.fill("#question", QUESTION)
    shoot(tab, "page-home.png")
    run = tab.locator("#runs a[href*='/runs/']").first.get_attribute("href")
    return run, run.split("/runs/")[0]


def run_page(tab, base: str, run: str) -> None:
    # the timeline replays the run's events; the report link shows once it has the last one
    tab.goto(base + run)
    tab.wait_for_selector("#report-link:not([hidden])", timeout=60_000)
    shoot(tab, "page-run.png")


def report_page(tab, base: str, task: str) -> None:
    """The task page from its top: the answer and as much of its evidence as
    fits in MAX_HEIGHT, cut after a whole passage rather than through one."""
    tab.goto(base + task)
    ends = [bottom for _, bottom in places(tab, "section.report, ol.insights > li") if bottom <= MAX_HEIGHT]
    shoot(tab, "page-report.png", 0, max(ends, default=MAX_HEIGHT) + 12)


def charts(tab) -> None:
    # the charts card, below the sources and what the filters dropped
    [(top, bottom)] = places(tab, "section.charts")
    shoot(tab, "page-charts.png", top - 16, bottom + 16)


def photograph(base: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_context(viewport={"width": WIDTH, "height": 800}).new_page()
            run, task = home_page(tab, base)
            run_page(tab, base, run)
            report_page(tab, base, task)
            charts(tab)
        finally:
            browser.close()


def main() -> None:
    if not shutil.which(CHROMIUM):
        sys.exit("chromium is not installed (as root, `make browser` installs Debian's package)")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="searchlake-screenshots-"))
    server = None
    try:
        env = private_env(work)
        research(env, work)
        server = start_serve(env, work)
        photograph(url_of(server, work))
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(work, ignore_errors=True)
    print(f"done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
