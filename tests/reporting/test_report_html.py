"""report.html rendered by a real headless Chromium (Debian's
/usr/bin/chromium, no browser download): the answer is there, each citation
is a link to its source labelled by the source's domain, the no-citation
marker shows, and hostile source text stays text.

Chromium's --dump-dom prints the DOM after the page has loaded (and after
any script would have run), so a script that executed would show in it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.report_helpers import PLAN, make_sources
from selectolax.lexbor import LexborHTMLParser

from tasks.synthesis.modeling import build_blueprint
from tasks.reporting.html import render_html
from tasks.reporting.report import build_report
from tasks.synthesis.synthesizer import synthesize
from tasks.synthesis.base import Source

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="needs Debian's /usr/bin/chromium (apt-get install chromium)")

TITLE_SCRIPT = "<script>document.title='pwned-title'</script>"
IMG_ONERROR = "<img src=x onerror=\"document.title='pwned-img'\">"


def chromium(tmp_path: Path, page: Path, *extra: str) -> str:
    profile = tmp_path / "profile"
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rendered(tmp_path: Path, html: str) -> LexborHTMLParser:
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    return LexborHTMLParser(chromium(tmp_path, page, "--dump-dom"))


def html_of(sources: list[Source], question: str = PLAN["question"], plan: dict | None = PLAN) -> str:
    synthesis = synthesize(sources, question, plan)
    return render_html(build_report(synthesis, build_blueprint(synthesis), task_id="t1"))


def test_report_renders_with_citations_linked_and_labelled_by_domain(tmp_path):
    sources = make_sources()
    local = tmp_path / "notes.txt"
    sources.append(Source(number=4, source_id="local", url=local.as_uri(), title="My notes",
                          content_text="My notes on licensing: the license key of the [project] table names it."))
    dom = rendered(tmp_path, html_of(sources))
    assert dom.css_first("title").text() == PLAN["question"]
    assert dom.css_first("#report-title").text() == PLAN["question"]
    assert dom.css("#answer li.answer-point") and "build backend" in dom.css_first("#answer").text()
    assert dom.css("#evidence li.insight")  # the passages, below the answer

    by_id = {s.source_id: s for s in sources}
    links = dom.css("a.citation")
    assert links and all(link.parent.tag == "sup" for link in links)
    for link in links:
        source = by_id[link.attributes["data-source-id"]]
        assert link.attributes["href"] == source.url
        assert link.text() == source.domain
    assert {link.text() for link in links} >= {"packaging.python.org", "peps.python.org", "hatch.pypa.io"}
    assert "notes.txt" in {link.text() for link in links}  # a local file is labelled by its name

    listed = dom.css("#sources ol.sources li")
    assert [li.attributes["id"] for li in listed] == [f"source-{n}" for n in range(1, len(listed) + 1)]
    cited_urls = {link.attributes["href"] for link in links}
    assert {li.css_first("a.source-link").attributes["href"] for li in listed} == cited_urls
    assert dom.css_first("#no-citations") is None


def test_no_citations_marker_is_shown(tmp_path):
    dom = rendered(tmp_path, html_of([]))
    marker = dom.css_first("#no-citations")
    assert marker is not None and marker.text().startswith("No citations")
    assert "hidden" not in marker.attributes and "display" not in (marker.attributes.get("style") or "")
    assert dom.css("a.citation") == []
    assert "No sources were found" in dom.css_first("#issues").text()
    # It renders visibly too: a screenshot is produced without error.
    shot = tmp_path / "shot.png"
    chromium(tmp_path, tmp_path / "report.html", f"--screenshot={shot}", "--window-size=900,900")
    assert shot.stat().st_size > 1000


def test_hostile_source_text_does_not_run(tmp_path):
    evil = make_sources([
        ("https://evil.example.com/a", f"Build backend guide {TITLE_SCRIPT}{IMG_ONERROR}",
         f"The build backend is declared in the [build-system] table {TITLE_SCRIPT} {IMG_ONERROR} here."),
        ("javascript:alert(1)", "Not a link", "The build backend javascript source lists project metadata."),
    ])
    question = f"{PLAN['question']} <b>bold?</b>"
    html = html_of(evil, question)
    assert "<script" not in html and "<img" not in html  # escaped before any browser sees it
    dom = rendered(tmp_path, html)
    assert dom.css_first("title").text() == question  # no script rewrote document.title
    assert dom.css("script") == [] and dom.css("img") == [] and dom.css("#report-title b") == []
    assert TITLE_SCRIPT in dom.css_first("#report").text()  # shown as text
    assert TITLE_SCRIPT in dom.css_first("#sources").text()
    hrefs = [node.attributes.get("href") or "" for node in dom.css("[href]")]
    assert hrefs and not [h for h in hrefs if not h.startswith(("http://", "https://", "file://"))]
    unlinked = [n for n in dom.css("span.citation") if n.attributes["data-source-id"] == "src2"]
    assert unlinked and unlinked[0].text() == "javascript:alert(1)"


@pytest.mark.parametrize("question, opening, said", [
    ("How long does the heater take to warm the tank water?", "The sources found may not answer this question",
     "only touch on it"),
    ("加热器 150 W 要多久把水加热？", "找到的来源可能没有回答这个问题", "另一种语言"),
])
def test_a_caution_that_the_quotes_only_touch_the_question_heads_the_summary(tmp_path, question, opening, said):
    heater = Source(number=1, source_id="s1", url="file:///notes/heater.md", title="Heater notes",
                    content_text="The heater is a 150 W model. My tank holds 120 litres of water and the heater "
                                 "warms it up slowly in winter.")
    synthesis = synthesize([heater], question, None)
    report = build_report(synthesis, build_blueprint(synthesis), task_id="t1")
    heading = "## 回答" if synthesis.language == "zh" else "## Answer"
    answer = report.markdown.split(f"{heading}\n\n", 1)[1]
    assert answer.startswith(f"*{opening}")
    dom = rendered(tmp_path, render_html(report))
    first = dom.css_first("#answer h2").next
    assert first.tag == "p" and "caution" in first.attributes["class"] and said in first.text()