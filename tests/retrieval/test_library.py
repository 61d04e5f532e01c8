"""The `library` provider: indexing a folder (or Python's docs) under
SEARCHLAKE_HOME, incremental re-indexing, and hybrid search with calibrated scores."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from schemas.urls import check_lake_url
from tasks.common.settings import Settings
from tasks.retrieval.providers.library.documents import PASSAGE_CHARS, PYDOC_PAGES, passages
from tasks.retrieval.providers.library.extraction import SkipFile, extract
from tasks.retrieval.providers.library.documents import corpus_for
from tasks.retrieval.providers.library.index import _LOADED, index_library, open_index
from tasks.retrieval.providers.base import Query
from tasks.retrieval.providers.library.provider import LibraryProvider, best_window
from tasks.retrieval.providers.library.ranking import ACROSS_SCORE, calibrated_score

FILLER = "\n\n".join(
    f"Paragraph {n} talks about soil preparation, compost layers and watering schedules "
    "for raised beds in spring, with notes on mulch and drainage for each bed." for n in range(20)
)


def write_docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "guide.md").write_text(
        "# Gardening Guide\n\n" + FILLER + "\n\nLate in summer, tomato blight spreads fast in humid weather; "
        "remove affected leaves and apply a copper fungicide.\n\n" + FILLER, encoding="utf-8")
    (folder / "bikes.txt").write_text(
        "Bicycle maintenance\n===================\n\nClean the chain, then apply chain lubrication "
        "sparingly. Check tyre pressure weekly.\n", encoding="utf-8")
    (folder / "sub").mkdir(exist_ok=True)
    (folder / "sub" / "bread.html").write_text(
        "<html><head><title>Bread Baking</title><script>var secretword = 1;</script></head>"
        "<body><nav>Home | About</nav><h1>Sourdough</h1><p>A sourdough starter at 100% hydration "
        "needs feeding twice a day.</p><p>Bake the loaf at 250 degrees.</p></body></html>", encoding="utf-8")
    (folder / "中文.md").write_text(
        "# 机器学习笔记\n\n大语言模型在医疗诊断中的应用越来越广泛。\n\n另一个段落讨论天气预报。\n", encoding="utf-8")
    (folder / "blob.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    (folder / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")  # not a document type: ignored
    (folder / ".hidden").mkdir(exist_ok=True)
    (folder / ".hidden" / "secret.md").write_text("# Hidden\n\ntomato blight\n", encoding="utf-8")
    os.symlink(folder / "missing-target.md", folder / "broken.md")  # unreadable: dangling link
    return folder


@pytest.fixture
def docs(tmp_path) -> Path:
    return write_docs(tmp_path / "docs")


@pytest.fixture
def lib_settings(settings, docs) -> Settings:
    return Settings(home=settings.home, library=docs)


def search(settings, text, n=5, intent="library"):
    return LibraryProvider(settings).search(Query("q1", text, intent), n)


def doc_rows(settings) -> dict:
    """The stored documents, by path."""
    return {d.path: d for d in open_index(settings, corpus_for(settings)).documents}


# -- indexing a folder ------------------------------------------------------------

def test_index_reports_documents_and_skips_without_raising(lib_settings):
    report = index_library(lib_settings)
    assert report.documents == report.added == 4  # guide.md, bikes.txt, sub/bread.html, 中文.md
    skipped = {s.path: s.reason for s in report.skipped}
    assert set(skipped) == {"blob.txt", "broken.md"}
    assert "binary" in skipped["blob.txt"]
    assert "unreadable" in skipped["broken.md"]
    assert report.rebuilt
    assert set(doc_rows(lib_settings)) == {"guide.md", "bikes.txt", "sub/bread.html", "中文.md"}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_file_without_read_permission_is_skipped(lib_settings, docs):
    locked = docs / "locked.txt"
    locked.write_text("secret", encoding="utf-8")
    locked.chmod(0)
    try:
        report = index_library(lib_settings)
    finally:
        locked.chmod(0o644)
    assert any(s.path == "locked.txt" and "unreadable" in s.reason for s in report.skipped)


def test_right_document_ranks_first_with_its_matching_passage(lib_settings, docs):
    hits = search(lib_settings, "tomato blight fungicide")
    assert hits[0].title == "Gardening Guide"
    assert hits[0].url == (docs / "guide.md").as_uri()
    snippet = hits[0].snippet
    assert "blight" in snippet and len(snippet) <= 320
    assert not snippet.startswith("# Gardening Guide")  # the best passage, not the document start
    assert 0.0 < hits[0].provider_score <= 1.0
    check_lake_url(hits[0].url)


def test_titles_come_from_heading_underline_and_html_title(lib_settings):
    assert search(lib_settings, "chain lubrication")[0].title == "Bicycle maintenance"
    bread = search(lib_settings, "sourdough hydration")[0]
    assert bread.title == "Bread Baking" and "hydration" in bread.snippet
    # script and navigation text are not document text
    assert search(lib_settings, "secretword") == []
    assert "var secretword" not in bread.content_text and "Home | About" not in bread.content_text


def test_hidden_folders_are_not_indexed(lib_settings):
    assert all(".hidden" not in h.url for h in search(lib_settings, "tomato blight"))


def test_chinese_documents_are_searchable(lib_settings):
    hits = search(lib_settings, "大语言模型 医疗")
    assert hits and hits[0].title == "机器学习笔记"
    assert "医疗" in hits[0].snippet


@pytest.mark.parametrize("question, title", [
    ("番茄晚疫病怎么防治？", "Gardening Guide"),  # tomato blight: not a word of it in the English pages
    ("自行车链条该怎么保养？", "Bicycle maintenance"),
    ("酸面包的酵头多久喂一次？", "Bread Baking"),
])
def test_a_question_in_another_language_than_the_library_finds_its_pages_by_meaning(lib_settings, question, title):
    hits = LibraryProvider(lib_settings).search(Query("q1", question, "library", question=question), 3)
    # the one Chinese page of the library, which the model would read as closer, does not match its words
    assert hits[0].title == title and "机器学习笔记" not in [h.title for h in hits]
    assert hits[0].question_score == ACROSS_SCORE and hits[0].content_text
    # a question in the library's language is ranked by its words, as before
    english = LibraryProvider(lib_settings).search(
        Query("q1", "tomato blight", "library", question="How do I treat tomato blight?"), 3)
    assert english[0].title == "Gardening Guide" and english[0].question_score != ACROSS_SCORE


def test_weak_match_scores_lower_than_strong_match(lib_settings):
    strong = search(lib_settings, "tomato blight fungicide")[0].provider_score
    weak = search(lib_settings, "tomato quantum entanglement")[0].provider_score
    assert 0.0 < weak < 0.5 < strong
    assert search(lib_settings, "quantum entanglement") == []


def test_content_text_is_truncated_to_the_setting(settings, docs):
    short = Settings(home=settings.home, library=docs, content_max_chars=200)
    hit = search(short, "tomato blight")[0]
    assert len(hit.content_text) <= 200 and hit.extra["content_truncated"]


def test_a_long_document_is_stored_around_its_passage_that_answers(settings, tmp_path):
    """Past SEARCHLAKE_CONTENT_MAX_CHARS a document keeps the stretch around
    what the question asks, not its first pages, so the answer can be quoted."""
    folder = tmp_path / "long"
    folder.mkdir()
    filler = "\n\n".join(f"Section {n}. The garden needs watering in dry weeks and mulch in spring." for n in range(400))
    answer = "Tomato blight is stopped by removing infected leaves and spraying copper fungicide."
    (folder / "garden.md").write_text(f"# Garden notes\n\n{filler}\n\n{answer}\n\n{filler}", encoding="utf-8")
    short = Settings(home=settings.home, library=folder, content_max_chars=2000)
    hit = search(short, "How do I stop tomato blight?")[0]
    text = (folder / "garden.md").read_text(encoding="utf-8")
    assert answer in hit.content_text and len(hit.content_text) <= 2000
    pieces = [text[start:end] for start, end in hit.extra["content_spans"]]
    assert hit.content_text == "\n\n[…]\n\n".join(pieces)  # verbatim stretches of the document


# -- re-indexing ------------------------------------------------------------------

def test_reindex_touches_only_the_changed_file(lib_settings, docs):
    index_library(lib_settings)
    before = doc_rows(lib_settings)
    again = index_library(lib_settings)
    assert (again.added, again.updated, again.removed, again.rebuilt) == (0, 0, 0, False)
    assert again.unchanged == 4

    bikes = docs / "bikes.txt"
    bikes.write_text("Bicycle maintenance\n===================\n\nTrue the wheels and replace brake pads.\n",
                     encoding="utf-8")
    os.utime(bikes, (bikes.stat().st_atime, bikes.stat().st_mtime + 10))
    changed = index_library(lib_settings)
    assert (changed.added, changed.updated, changed.removed, changed.unchanged) == (0, 1, 0, 3)
    assert changed.rebuilt
    after = doc_rows(lib_settings)
    assert {p for p in after if after[p] != before[p]} == {"bikes.txt"}
    assert search(lib_settings, "brake pads")[0].title == "Bicycle maintenance"
    assert search(lib_settings, "chain lubrication") == []


def test_touched_file_with_same_bytes_is_not_reindexed(lib_settings, docs):
    index_library(lib_settings)
    guide = docs / "guide.md"
    os.utime(guide, (guide.stat().st_atime, guide.stat().st_mtime + 100))
    report = index_library(lib_settings)
    assert (report.touched, report.updated, report.rebuilt) == (1, 0, False)
    assert index_library(lib_settings).unchanged == 4


def test_removed_file_is_dropped(lib_settings, docs):
    index_library(lib_settings)
    (docs / "sub" / "bread.html").unlink()
    report = index_library(lib_settings)
    assert report.removed == 1 and report.rebuilt
    assert "sub/bread.html" not in doc_rows(lib_settings)
    assert search(lib_settings, "sourdough") == []


def test_search_indexes_a_never_indexed_corpus_first(lib_settings):
    assert search(lib_settings, "tomato blight")[0].title == "Gardening Guide"


def test_index_survives_a_new_process(lib_settings):
    index_library(lib_settings)
    _LOADED.clear()  # as a new process finds it: the stored index is loaded, not rebuilt
    report = index_library(lib_settings)
    hits = search(lib_settings, "tomato blight")
    assert not report.rebuilt and report.unchanged == 4 and hits[0].title == "Gardening Guide"


def test_concurrent_searches_agree(lib_settings):
    provider = LibraryProvider(lib_settings)
    provider.prepare()
    queries = ["tomato blight", "chain lubrication", "sourdough hydration", "大语言模型"] * 3
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def run(index: int, text: str) -> None:
        try:
            results[index] = [h.url for h in provider.search(Query(f"q{index}", text, "web"), 3)]
        except BaseException as error:  # surfaced below: a thread's exception is otherwise lost
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i, q)) for i, q in enumerate(queries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for index, text in enumerate(queries):
        assert results[index] == results[index % 4], text


def test_missing_folder_is_a_one_line_value_error(settings, tmp_path):
    missing = tmp_path / "no-such-folder"
    with pytest.raises(ValueError, match="no-such-folder") as raised:
        LibraryProvider(Settings(home=settings.home, library=missing))
    assert "\n" not in str(raised.value)


# -- Python's own docs, the default corpus ------------------------------------------

def test_default_corpus_is_pythons_documentation(settings):
    assert settings.library is None
    report = index_library(settings)
    hits = search(settings, "with statement context manager")
    assert report.documents > 50 and not report.skipped
    assert {h.extra["path"] for h in hits[:2]} & {"with", "context-managers"}
    assert hits[0].url.startswith("https://docs.python.org/")
    for hit in hits:
        check_lake_url(hit.url)
        assert hit.snippet and hit.content_text and 0 < hit.provider_score <= 1


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="pages checked against the 3.11 docs")
def test_every_pydoc_topic_has_a_docs_page():
    from pydoc_data.topics import topics

    assert set(topics) == set(PYDOC_PAGES)


# -- pieces -------------------------------------------------------------------------

def test_passages_pack_paragraphs_and_cut_long_ones():
    text = "\n\n".join(["word " * 50] * 10) + "\n\n" + "x" * 4000 + "\n\nend."
    spans = passages(text)
    assert all(end - start <= PASSAGE_CHARS for start, end in spans)
    assert spans == sorted(spans) and spans[-1][1] == len(text)
    covered = "".join(text[s:e] for s, e in spans)
    assert covered.replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")
    assert len(spans) > 4


def test_snippet_window_prefers_the_region_with_most_query_terms():
    passage = ("alpha " * 80) + "the tomato blight is here " + ("beta " * 80)
    window = best_window(passage, ["tomato", "blight"], width=120)
    assert "tomato blight" in window and window.startswith("…") and window.endswith("…")
    assert best_window("short text", ["x"]) == "short text"


def test_calibrated_score_does_not_make_a_weak_best_match_perfect():
    assert calibrated_score(0.0, 3.0, 0.0) == 0.0
    once = 3.0 / 2.2  # Σ idf / (k1 + 1): every term once, at average length
    assert calibrated_score(once, 3.0, 3.0) == pytest.approx(0.8)
    assert calibrated_score(once, 3.0, 1.0) < calibrated_score(once, 3.0, 3.0)
    assert calibrated_score(100.0, 3.0, 3.0) <= 1.0


def test_pdf_needs_pypdf_or_is_indexed(tmp_path):
    pdf = minimal_pdf("Photosynthesis converts light into chemical energy")
    try:
        import pypdf  # noqa: F401
    except ImportError:
        with pytest.raises(Exception, match="pypdf"):
            extract("pdf", pdf, "paper.pdf")
        return
    doc = extract("pdf", pdf, "paper.pdf")
    assert "Photosynthesis" in doc.text


def test_undecodable_and_empty_files_are_skips():
    with pytest.raises(SkipFile, match="binary"):
        extract("text", b"abc\x00def", "x.txt")
    with pytest.raises(SkipFile, match="no text"):
        extract("markdown", b"   \n\n", "empty.md")
    assert extract("text", "caf\xe9".encode("cp1252"), "old.txt").text == "café"


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with one line of Helvetica text."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def test_an_xhtml_page_with_self_closing_anchors_is_text_not_navigation():
    """XHTML manuals (DocBook: Debian's reference, for one) mark sections with
    <a id="x"/>, which an HTML parser reads as a link wrapping the rest of the page."""
    body = "".join(f'<div class="section"><h2><a id="s{n}"/>第 {n} 节</h2><p>{"系统启动时会读取配置文件。" * 8}</p>'
                   f'<p>See <a href="#s{n + 1}">the next section</a>.</p></div>' for n in range(6))
    page = f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>第 2 章</title></head>' \
           f'<body>{body}</body></html>'
    extracted = extract("html", page.encode(), "ch02.zh-cn.html")
    assert extracted.title == "第 2 章" and extracted.text.count("系统启动时会读取配置文件。") == 48
    nav = "<html><body><ul>" + "".join(f'<li><a href="p{n}.html">Page {n}</a></li>' for n in range(30)) + "</ul></body></html>"
    with pytest.raises(SkipFile, match="mostly links"):
        extract("html", nav.encode(), "index.html")


def test_docbook_navigation_bars_are_not_page_text():
    """DocBook's manuals (GIMP, PostgreSQL, Publican's books) put the
    previous and next sections' titles in bars above and below every page:
    indexed, they make a page match its neighbours' subjects."""
    page = ('<html><head><title>9.9. Quotas</title></head><body><div id="banner"><a href="/get">Download the ebook'
            '</a></div><div class="navheader"><table><tr><td><a href="cron.html">Prev</a></td><th>9. Unix Services'
            '</th><td><a href="backup.html">Next</a></td></tr></table></div><ul class="docnav top"><li>'
            '<a href="cron.html">9.8. Scheduling with anacron</a></li></ul><div class="section"><h2>9.9. Quotas</h2>'
            '<p>The quota system limits the disk space a user can use.</p></div><div class="navfooter"><table><tr>'
            '<td><a href="cron.html">9.8. Scheduling with anacron</a></td><td><a href="backup.html">9.10. Backup'
            '</a></td></tr></table></div></body></html>')
    extracted = extract("html", page.encode(), "sect.quotas.html")
    assert extracted.text == "9.9. Quotas\n\nThe quota system limits the disk space a user can use."


def test_wrapped_chinese_in_html_runs_on_and_preformatted_text_keeps_its_lines():
    """Manuals wrap their HTML source at 80 columns; a browser joins the
    lines, with nothing between two Chinese characters — and so must the
    text, or a Chinese sentence is cut where the source happened to wrap."""
    page = ("<html><body><p>在命令行输入Ctrl-D，即可关闭\nshell 活动。或者，你也可以键入\n”exit\" 退出命令行。"
            "这个多用户环境是伟大的\nUnix 的特性，很\n容易上瘾。</p>"
            "<pre>$ script\n  做些操作\n按 Ctrl-D 退出\n</pre><ul><li>one</li><li>two</li></ul></body></html>")
    text = extract("html", page.encode(), "ch01.html").text
    assert text.split("\n\n") == ["在命令行输入Ctrl-D，即可关闭 shell 活动。或者，你也可以键入 ”exit\" 退出命令行。"
                                  "这个多用户环境是伟大的 Unix 的特性，很容易上瘾。",
                                  "$ script\n做些操作\n按 Ctrl-D 退出", "- one", "- two"]


def test_html_list_items_are_stored_with_their_bullet_or_number():
    """A short item is an item of its list for the quote finder, not a
    heading; the steps of an ordered list keep their numbers."""
    page = ("<html><body><p>You can detach the session in any way:</p><ol><li><p>Unplug the network cable</p></li>"
            "<li>Type ^A d and log out</li></ol><ul><li>one</li><li></li><li><p>two</p><ul><li>inner</li></ul></li>"
            "</ul></body></html>")
    text = extract("html", page.encode(), "screen.html").text
    assert text.split("\n\n") == ["You can detach the session in any way:", "1. Unplug the network cable",
                                  "2. Type ^A d and log out", "- one", "- two", "- inner"]


def test_an_html_data_table_is_stored_as_rows_and_a_layout_table_as_text():
    """A row's cells stay on one line, under the header row, so a quote of
    the row says which value belongs to what; a note box laid out as a
    table is read as its text."""
    page = ("<html><body><p>What I aim for.</p><table><tr><th>Parameter</th><th>Target</th></tr>"
            "<tr><td>Temperature</td><td>24-26 &deg;C</td></tr><tr><td>Pipe</td><td><code>a|b</code></td></tr>"
            "</table><table><tr><td><img alt='Note'/></td><th>Note</th></tr><tr><td colspan='2'><p>Back up "
            "first.</p></td></tr></table></body></html>")
    text = extract("html", page.encode(), "water.html").text
    assert text.split("\n\n") == ["What I aim for.",
                                  "| Parameter | Target |\n| --- | --- |\n| Temperature | 24-26 °C |\n| Pipe | a\\|b |",
                                  "Note", "Back up first."]


def test_tables_nested_deep_are_read_as_their_text():
    """A page of tables nested a thousand deep lays out text: each cell's
    text once, no rows (a table that holds a table is not asked for rows,
    which also keeps reading such a page linear)."""
    deep = "<html><body>" + "<table><tr><td>x</td><td>" * 1500 + "y" + "</td></tr></table>" * 1500 + "</body></html>"
    text = extract("html", deep.encode(), "deep.html").text
    assert text.count("x") == 1500 and text.endswith("y") and "|" not in text
