"""The answer as the terminal prints it: lines within the width (a CJK
character takes two cells), words never split, closing punctuation never
opening a line, every URL whole."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from rich.cells import cell_len

from schemas.report import ANSWER_WORDS, ReportSource, ResearchReport
from tasks.common.text import reading_words
from tasks.reporting.terminal import _wrapped, answer_lines
from tasks.synthesis.base import Source
from tasks.synthesis.extractive import extractive_synthesis

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)


@given(st.lists(WORDS, min_size=1, max_size=60), st.integers(40, 100))
def test_english_lines_fit_and_no_word_is_split(words, width):
    lines = _wrapped(" ".join(words), width, bullet="• ")
    assert all(cell_len(line) <= width for line in lines)
    assert " ".join(line.removeprefix("• ").strip() for line in lines).split() == words


def test_chinese_lines_count_two_cells_a_character_and_never_open_on_a_comma():
    text = "要让服务开机自动启动，请运行 systemctl enable 命令：它会创建所需的符号链接；之后无需手动启动。" * 3
    lines = _wrapped(text, 40, bullet="• ")
    assert all(cell_len(line) <= 42 for line in lines)  # a full-width comma may hang past the edge
    assert not [line for line in lines[1:] if line.strip()[:1] in "，。；："]
    assert "".join(line.removeprefix("• ").strip() for line in lines).replace(" ", "") == text.replace(" ", "")


def test_korean_is_spaced_so_its_lines_break_between_words_not_inside_them():
    words = "서비스를 부팅할 때 자동으로 시작하려면 이 명령을 한 번 실행하십시오".split() * 4
    lines = _wrapped(" ".join(words), 40, bullet="• ")
    assert all(cell_len(line) <= 40 for line in lines)
    assert " ".join(line.removeprefix("• ").strip() for line in lines).split() == words


def test_the_answer_names_its_sources_with_whole_urls():
    url = "https://docs.python.org/3.11/reference/datamodel.html?topic=customization#customization-and-more"
    source = Source(number=1, source_id="s1", url=url, title="Basic customization",
                    content_text="The cyclic garbage collector detects reference cycles and deletes them.")
    synthesis = extractive_synthesis([source], "How does the garbage collector handle reference cycles?")
    report = ResearchReport(markdown="", synthesis=synthesis,
                            sources=[ReportSource(title="Basic customization", url=url, noteIndex=1, sourceId="s1")])
    lines = answer_lines(report, width=60)
    assert lines[0] == synthesis.question
    assert any(re.search(r"\[1\]$", line) for line in lines)
    assert "    " + url in lines and "Sources" in lines


def test_source_text_never_reaches_the_terminal_as_a_control_sequence():
    hostile = "Reference cycles are collected \x1b]0;pwned\x07 by the \x1b[2J\x1b[31mcyclic\x1b[0m collector \u202e."
    url = "https://x.example/\x1b[2Jpage"
    source = Source(number=1, source_id="s1", url=url, title="GC \x1b[5mnotes", content_text=hostile)
    synthesis = extractive_synthesis([source], "How are reference cycles collected?")
    report = ResearchReport(markdown="", synthesis=synthesis,
                            sources=[ReportSource(title="GC \x1b[5mnotes", url=url, noteIndex=1, sourceId="s1")])
    shown = "\n".join(answer_lines(report, width=80))
    assert "collector" in shown
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", shown)


def test_the_terminal_shows_the_answer_within_its_budget_and_says_the_evidence_is_in_the_report():
    paragraphs = ["The garbage collector finds reference cycles that reference counting alone never frees.",
                  "To find reference cycles, the garbage collector walks each generation of container objects.",
                  "Reference cycles through a frame are found by the garbage collector only when it next runs.",
                  "Objects with finalizers inside reference cycles are found and freed by the garbage collector.",
                  "The gc module asks the garbage collector to find reference cycles at once, by hand.",
                  "Thresholds decide how often the garbage collector tries to find reference cycles per generation.",
                  "Weak references avoid reference cycles, so the garbage collector has fewer to find.",
                  "A disabled garbage collector never finds reference cycles, and they stay in memory."]
    paragraphs += [f"垃圾回收器在扫描第 {n} 代对象时发现循环引用，并回收其中的{s}。"
                   for n, s in enumerate(["列表", "字典", "帧对象", "类", "闭包", "生成器", "模块", "集合"])]
    sources = [Source(number=n, source_id=f"s{n}", url=f"file:///notes/gc-{n}.md", title=f"GC note {n}",
                      content_text=text) for n, text in enumerate(paragraphs, 1)]
    listed = [ReportSource(title=s.title, url=s.url, noteIndex=s.number, sourceId=s.source_id) for s in sources]
    for question, more in (("How does the garbage collector find reference cycles?",
                            "The report quotes {} passages of the sources as evidence."),
                           ("垃圾回收器怎么发现循环引用？", "报告引用了来源中的 {} 段原文作为证据。")):
        synthesis = extractive_synthesis(sources, question)
        report = ResearchReport(markdown="", synthesis=synthesis, sources=listed)
        lines = answer_lines(report, width=80)
        assert more.format(len(synthesis.synthesized_insights)) in lines
        points = [line for line in lines if line.startswith("• ")]
        assert 1 <= len(points) == len(synthesis.answer) <= len(synthesis.synthesized_insights)
        assert reading_words(" ".join(p.text for p in synthesis.answer)) <= ANSWER_WORDS


HEATER = Source(number=1, source_id="s1", url="file:///notes/heater.md", title="Heater notes",
                content_text="The heater is a 150 W model. My tank holds 120 litres of water and the heater "
                             "warms it up slowly in winter.")


@pytest.mark.parametrize("question, said", [
    ("How long does the heater take to warm the tank water?", "only touch on it"),
    ("加热器 150 W 要多久把水加热？", "另一种语言"),  # sources in another language, sharing only "150 W"
])
def test_a_caution_that_speaks_of_the_passages_below_comes_before_them(question, said):
    synthesis = extractive_synthesis([HEATER], question)
    report = ResearchReport(markdown="", synthesis=synthesis,
                            sources=[ReportSource(title="Heater notes", url=HEATER.url, noteIndex=1, sourceId="s1")])
    lines = answer_lines(report, width=80)
    caution = next(i for i, line in enumerate(lines) if said in line)
    assert caution < next(i for i, line in enumerate(lines) if line.startswith("• "))


@given(st.lists(st.sampled_from(["a", "ab", "关机", "systemctl", "—", "，", "/etc/apt/apt.conf.d/50unattended-upgrades",
                                 "“", "(8)", "默认标准值", " "]), min_size=1, max_size=80), st.integers(40, 100))
# a full-width comma after a space, at the edge: it hangs against the word, not after the space
@example(["a"] * 5 + ["/etc/apt/apt.conf.d/50unattended-upgrades", "默认标准值", " ", "，"], 58)
def test_any_mix_of_wide_and_narrow_text_wraps_within_the_width(pieces, width):
    text = "".join(pieces)
    assume(text.strip())
    lines = _wrapped(text, width, bullet="• ")
    assert all(cell_len(line) <= width + 2 for line in lines)  # a closing mark may hang past the edge
    assert all(line.strip() for line in lines)  # no empty line after a mark that hung
    assert "".join(line.removeprefix("• ").strip() for line in lines).replace(" ", "") == \
        " ".join(text.split()).replace(" ", "")
