"""Synthesis: extractive and LLM synthesizers, citation checking, data points,
contradictions, gaps, language, and a task without sources.

The LLM is an OpenAI-compatible endpoint served by httpx.MockTransport:
no network. Chosen failure policy (documented in tasks/synthesis/synthesizer.py):
`llm_synthesis` raises LLMError on an unusable answer; `synthesize` falls
back to the extractive synthesizer with a warning unless fallback=False."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.report_helpers import CONFIG, PACKAGING, PLAN, answer, make_sources, mock_llm

from schemas.report import ANSWER_WORDS, Citation, Insight, SynthesisResult
from tasks.common.text import reading_words
from tasks.lake.catalog import open_catalog
from tasks.lake.consolidation import consolidate
from tasks.synthesis.extractive import extractive_synthesis
from tasks.lake.landing import land_files
from tasks.common.llm import LLMError
from tasks.synthesis.figures import figures
from tasks.synthesis.passages import block_spans, comparable, locate, sentence_spans, table_rows
from tasks.reporting.report import read_synthesis_input
from tasks.synthesis.synthesizer import synthesize, synthesize_material
from tasks.synthesis.base import Source, finish
from tasks.synthesis.llm_synthesis import llm_synthesis, resolve_source
from tasks.synthesis.candidates import candidates, windows
from tasks.synthesis.evidence import score
from tasks.synthesis.question import read_question


# -- text tools ------------------------------------------------------------------

def test_sentences_split_latin_and_chinese_punctuation():
    text = "First sentence. Version 3.5 stays whole! 第一句。第二句！第三句？\n\nA wrapped\nline."
    assert [" ".join(text[s:e].split()) for s, e in sentence_spans(text)] == ["First sentence.", "Version 3.5 stays whole!", "第一句。", "第二句！",
                               "第三句？", "A wrapped line."]


def test_quote_check_ignores_case_whitespace_and_quote_style():
    text = "The  \u201cproject\u201d table\nholds METADATA."
    assert locate('the "project" table holds metadata.', text) == (0, len(text))
    assert locate("The … holds metadata", text) == (0, len(text) - 1)  # an elided quote, parts in order
    assert locate("holds metadata … The", text) is None
    assert locate("", text) is None


def test_chinese_sentences_end_at_full_stops_and_semicolons_and_run_on_across_wrapped_lines():
    text = ("第 3 章 系统初始化\n系统服务由 systemd 管理，启用一个服务会在\n对应的目录里创建符号链接，它们\n"
            "因此安装的单元会在启动时运行；停用则删除链接。\n\n第二段。")
    assert [" ".join(text[s:e].split()) for s, e in sentence_spans(text)] == [
        "第 3 章 系统初始化",
        "系统服务由 systemd 管理，启用一个服务会在 对应的目录里创建符号链接，它们 因此安装的单元会在启动时运行；",
        "停用则删除链接。", "第二段。"]


CHINESE = "要让服务开机自动启动，请运行 systemctl enable 命令：它会创建所需的符号链接；之后无需手动启动。"


def test_a_chinese_quote_verifies_against_itself_and_its_half_width_copy():
    assert locate(CHINESE, CHINESE) == (0, len(CHINESE))
    copied = "请运行 SYSTEMCTL enable 命令:它会创建所需的符号链接;"  # half-width punctuation, spaces dropped
    start, end = locate(copied, CHINESE)
    assert CHINESE[start:end] == "请运行 systemctl enable 命令：它会创建所需的符号链接；"
    assert locate("它会创建所需的符号链接…之后无需手动启动", CHINESE) is not None
    assert locate("它会删除所需的符号链接", CHINESE) is None


@given(st.text(alphabet="服务启动命令，。；：（）ａｂＡＢab12１２ \n\u3000-", min_size=1, max_size=60), st.data())
def test_every_stretch_of_a_text_is_found_where_it_is(text, data):
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    quote = text[i:j]
    span = locate(quote, text)
    if not quote.strip(" \n\u3000"):
        assert span is None
        return
    assert span is not None
    assert comparable(text[span[0]:span[1]])[0] == comparable(quote.strip(" \n\u3000"))[0]


# -- extractive ----------------------------------------------------------------------

def test_extractive_quotes_are_verbatim_passages_of_the_cited_source():
    sources = make_sources()
    result = extractive_synthesis(sources, PLAN["question"], PLAN)
    assert result.synthesizer == "extractive" and result.language == "en"
    assert result.synthesized_insights
    by_id = {s.source_id: s for s in sources}
    for citation in result.all_citations():
        assert citation.verified, citation
        source = by_id[citation.source_id]
        assert source.content_text[citation.start:citation.end] == citation.quote
        assert citation.url == by_id[citation.source_id].url
        assert citation.domain == by_id[citation.source_id].domain
    assert not [w for w in result.warnings if "unverified" in w]


def test_extractive_groups_by_dimension_and_reports_uncovered_dimensions_as_gaps():
    result = extractive_synthesis(make_sources(), PLAN["question"], PLAN)
    dims = {i.dimension for i in result.synthesized_insights}
    assert {"build backend", "project metadata"} <= dims
    backend = [i for i in result.synthesized_insights if i.dimension == "build backend"]
    assert "build backend" in backend[0].citations[0].quote
    assert all("build" in i.citations[0].quote.casefold() for i in backend)
    gaps = [g for g in result.contradictions_or_gaps if g.kind == "gap"]
    assert [g.dimension for g in gaps] == ["licensing"]
    assert "licensing" in gaps[0].description


def test_near_identical_passages_become_one_insight_with_corroborating_citations():
    same = "The build backend reads the [build-system] table first."
    sources = make_sources(PACKAGING + [("https://mirror.example.org/x", "Mirror", f"Copied: {same}")])
    result = extractive_synthesis(sources, "Which table does the build backend read first?")
    hits = [i for i in result.synthesized_insights if any(same in c.quote for c in i.citations)]
    assert len(hits) == 1
    assert {c.source_id for c in hits[0].citations} == {"src3", "src4"}
    assert hits[0].citability == "high"
    assert "1 other source" in hits[0].text


def test_fabricated_quote_is_flagged_not_trusted():
    sources = make_sources()
    result = SynthesisResult(question="q", synthesized_insights=[Insight(text="claim", citations=[
        sources[0].cite_quote("pyproject.toml is a configuration file used by packaging tools."),
        sources[1].cite_quote("PEP 621 makes setup.py mandatory for every project."),
    ])])
    finish(result, sources)
    real, fake = result.synthesized_insights[0].citations
    assert real.verified and not fake.verified
    assert any("PEP 621 makes setup.py mandatory" in w and "peps.python.org" in w for w in result.warnings)
    assert result.synthesized_insights[0].citability == "medium"


def test_key_data_points_carry_value_unit_measure_and_citation():
    specs = [
        ("https://a.example.com/r", "A", "Global adoption of type hints reached 62% in the survey. "
                                           "The packaging market is worth $3.5 billion. "
                                           "Builds became 2.5x faster with caching."),
        ("https://b.example.cn/r", "B", "中国开发者市场规模达到3.2亿元。"),
    ]
    plan = {"search_summary": {"key_dimensions": ["adoption of type hints", "packaging market", "faster builds",
                                                  "市场规模"]}}
    result = extractive_synthesis(make_sources(specs), "What do surveys say about Python packaging?", plan)
    points = {(p.value, p.unit): p for p in result.key_data_points}
    assert {(62.0, "%"), (3.5, "billion USD"), (2.5, "x"), (3.2, "亿元")} <= set(points)
    assert "adoption of type hints" in points[(62.0, "%")].measure
    assert "市场规模" in points[(3.2, "亿元")].measure
    for p in result.key_data_points:
        assert p.citations and p.citations[0].verified and p.text in p.citations[0].quote


def test_units_years_fold_and_chinese_scales():
    found = {(f.value, f.unit) for f in figures("Support lasts 5 years; it grew tenfold to 10-fold; 用户约500万人；增长了3倍")}
    assert {(5.0, "years"), (10.0, "x"), (500.0, "万人"), (3.0, "x")} <= found
    assert not figures("Python 3.12 was released in 2023年")  # a version and a date are not quantities


def test_contradiction_when_sources_give_different_figures_for_one_measure():
    specs = [
        ("https://survey-a.example.com", "Survey A", "The adoption rate of pyproject.toml is 40% among maintainers."),
        ("https://survey-b.example.org", "Survey B", "The adoption rate of pyproject.toml is 65% among maintainers."),
        ("https://survey-c.example.net", "Survey C", "The adoption rate of pyproject.toml is 40% among maintainers."),
    ]
    result = extractive_synthesis(make_sources(specs), "What is the adoption rate of pyproject.toml?")
    contradictions = [c for c in result.contradictions_or_gaps if c.kind == "contradiction"]
    assert len(contradictions) == 1
    assert {c.source_id for c in contradictions[0].citations} == {"src1", "src2"}
    assert "40%" in contradictions[0].description and "65%" in contradictions[0].description
    # The agreeing third source corroborates the 40% figure instead of contradicting it.
    forty = next(p for p in result.key_data_points if p.value == 40.0)
    assert {c.source_id for c in forty.citations} == {"src1", "src3"}


def test_a_time_series_is_not_a_contradiction():
    specs = [("https://a.example.com", "A", "The adoption rate of pyproject.toml was 40% in 2022."),
             ("https://b.example.com", "B", "The adoption rate of pyproject.toml was 65% in 2024.")]
    result = extractive_synthesis(make_sources(specs), "adoption rate of pyproject.toml")
    assert not [c for c in result.contradictions_or_gaps if c.kind == "contradiction"]


def test_chinese_question_gets_chinese_labels_and_verbatim_quotes():
    specs = [("https://zh.example.cn/a", "报告", "大语言模型在医疗诊断中的应用正在快速增长。医院开始使用模型辅助影像诊断。"),
             ("https://en.example.com/b", "Report", "Large language models assist radiologists.")]
    plan = {"search_summary": {"key_dimensions": ["医疗诊断", "监管政策"]}}
    result = extractive_synthesis(make_sources(specs), "大语言模型在医疗诊断中的应用如何？", plan)
    assert result.language == "zh"
    insight = result.synthesized_insights[0]
    assert "指出" in insight.text and insight.citations[0].quote in specs[0][2]
    assert insight.citations[0].verified
    gap = next(g for g in result.contradictions_or_gaps if g.kind == "gap")
    assert gap.description == "未找到关于“监管政策”的证据。"


def test_a_question_the_sources_do_not_cover_is_a_gap_not_quoted_noise():
    result = extractive_synthesis(make_sources(), "How do I bake sourdough bread?")
    assert result.synthesized_insights == [] and result.all_citations() == []
    assert result.contradictions_or_gaps[0].kind == "gap"
    assert "do not answer this question" in result.contradictions_or_gaps[0].description
    chinese = extractive_synthesis(make_sources(), "量子计算的商业前景如何？")  # over English pages
    assert chinese.contradictions_or_gaps[0].description.startswith("找到的来源可能没有回答这个问题")


def test_no_sources_is_a_result_with_gaps_not_an_error():
    result = synthesize([], "What is X?", PLAN)
    assert result.synthesized_insights == [] and result.key_data_points == []
    assert [g.kind for g in result.contradictions_or_gaps] == ["gap"] * 4
    assert "No sources" in result.contradictions_or_gaps[0].description
    assert result.warnings


# -- the catalog ---------------------------------------------------------------------

def _land(settings, inbox, new_bundle, new_item, task: str = "t1"):
    inbox.write(new_bundle("q1", [
        new_item("https://peps.python.org/pep-0621/", 0.9, title="PEP 621",
                 snippet="Storing project metadata in pyproject.toml.",
                 content_text="This PEP specifies how to write a project's core metadata in a pyproject.toml file."),
        new_item("https://hatch.pypa.io/build", 0.4, title="Hatch", snippet="Hatchling is a build backend."),
    ], task_id=task, query_text="pyproject metadata"))
    with open_catalog(settings) as catalog:
        land_files(catalog, [inbox.folder])
        consolidate(catalog, task)


def test_load_sources_reads_consolidated_text_best_first(settings, inbox, new_bundle, new_item):
    _land(settings, inbox, new_bundle, new_item)
    with open_catalog(settings) as catalog:
        material = read_synthesis_input(catalog, "t1")  # no plan, no question: the task's queries stand in
    sources = material.sources
    result = synthesize_material(material)
    assert [s.number for s in sources] == [1, 2]
    assert sources[0].url == "https://peps.python.org/pep-0621/"
    # Quotes come from what the lake stores: the text, else the snippet; never the title.
    assert sources[0].text.startswith("This PEP specifies") and sources[0].text_field == "content_text"
    assert sources[1].text == "Hatchling is a build backend." and sources[1].text_field == "snippet"
    assert result.task_id == "t1" and result.question == "pyproject metadata"
    assert result.synthesized_insights and all(c.verified for c in result.all_citations())


def test_unknown_task_synthesizes_to_no_sources_without_calling_the_model(settings):
    calls: list = []
    with open_catalog(settings) as catalog:
        material = read_synthesis_input(catalog, "nothing-here", PLAN)
    result = synthesize_material(material, llm=CONFIG, client=mock_llm("{}", seen=calls))
    assert calls == []
    assert result.contradictions_or_gaps[0].kind == "gap" and not result.synthesized_insights


# -- LLM ---------------------------------------------------------------------------

GOOD = {
    "synthesized_insights": [
        {"text": "Metadata lives in the [project] table.", "dimension": "project metadata",
         "citations": [{"source": 2, "quote": "The [project] table holds metadata such as name and version"},
                       {"source": "S1", "quote": "Project metadata such as name and version lives in the [project] table."}]},
        {"text": "Hatchling is a backend.", "citations": [{"source": "src3", "quote": "Hatchling is a build backend."},
                                                          {"source": 7, "quote": "invented"}]},
    ],
    "key_data_points": [{"value": "40%", "unit": "%", "measure": "adoption", "text": "40% adopt",
                         "citations": [{"source": "[9]", "quote": "40%"}]}],
    "contradictions_or_gaps": [{"kind": "gap", "description": "Licensing is not covered.", "citations": []}],
}


def test_llm_answer_maps_citations_and_drops_sources_outside_the_list():
    seen: list = []
    result = llm_synthesis(make_sources(), PLAN["question"], PLAN, CONFIG, client=mock_llm(answer(GOOD), seen=seen))
    prompt = seen[0]["messages"][1]["content"]
    assert "[S1]" in prompt and "[S3]" in prompt and "build backend; project metadata" in prompt
    assert "---JSON---" in seen[0]["messages"][0]["content"]
    first, second = result.synthesized_insights
    assert [c.source_id for c in first.citations] == ["src2", "src1"]
    assert [c.source_id for c in second.citations] == ["src3"]  # source 7 does not exist
    assert all(c.verified for c in result.all_citations())
    assert result.key_data_points[0].value == 40.0 and result.key_data_points[0].citations == []
    dropped = [w for w in result.warnings if "not in the source list" in w]
    assert len(dropped) == 2 and any("7" in w for w in dropped) and any("[9]" in w for w in dropped)
    assert {c.source_id for c in result.all_citations()} <= {"src1", "src2", "src3"}
    assert result.synthesizer == "llm:mock-model" and result.tokens == 150
    assert result.contradictions_or_gaps[0].kind == "gap"


def test_a_models_answer_is_held_to_the_answer_budget_and_checked_like_any_quote():
    long_point = {"text": "The [project] table holds the metadata. " * 40,  # 240 words
                  "citations": [{"source": 2, "quote": "The [project] table holds metadata such as name and version"}]}
    doc = {**GOOD, "answer": [{"text": "Metadata lives in the [project] table.", "part": None,
                               "citations": [{"source": 2, "quote": "The [project] table holds metadata"}]},
                              long_point, long_point, {"text": "A made-up point.",
                                                       "citations": [{"source": 1, "quote": "never said"}]}]}
    result = llm_synthesis(make_sources(), PLAN["question"], PLAN, CONFIG, client=mock_llm(answer(doc)))
    assert reading_words(" ".join(p.text for p in result.answer)) <= ANSWER_WORDS
    assert [p.text for p in result.answer][:2] == ["Metadata lives in the [project] table.", long_point["text"].strip()]
    assert len(result.answer) == 2  # the second long point would pass the budget: it and what follows are left out
    assert result.answer[0].citations[0].verified
    without = llm_synthesis(make_sources(), PLAN["question"], PLAN, CONFIG, client=mock_llm(answer(GOOD)))
    # without an answer, the insights a verified quote backs answer, with those quotes only
    assert [p.text for p in without.answer] == [i.text for i in without.synthesized_insights]
    assert all(c.verified for p in without.answer for c in p.citations)


def test_llm_fabricated_quote_is_kept_unverified_with_a_warning():
    doc = {"synthesized_insights": [
        {"text": "x", "citations": [{"source": 1, "quote": "TOML was invented in 1850."}]},
        {"text": "y", "citations": [{"source": 2, "quote": "The [project] table holds metadata"}]}]}
    result = llm_synthesis(make_sources(), "q", None, CONFIG, client=mock_llm(answer(doc)))
    citation = result.synthesized_insights[0].citations[0]
    assert not citation.verified and result.synthesized_insights[0].citability == "low"
    assert result.synthesized_insights[1].citations[0].verified
    assert any("TOML was invented in 1850." in w for w in result.warnings)


def test_a_synthesis_whose_every_quote_is_invented_is_replaced_by_the_extractive_one():
    doc = {"answer": [{"text": "TOML is old.", "part": None,
                       "citations": [{"source": 1, "quote": "TOML was invented in 1850."}]}],
           "synthesized_insights": [{"text": "x", "citations": [{"source": 2, "quote": "Metadata is optional."}]}]}
    with pytest.raises(LLMError, match="none of the synthesis's 2 quotes is in the source it cites"):
        llm_synthesis(make_sources(), "q", None, CONFIG, client=mock_llm(answer(doc)))
    result = synthesize(make_sources(), PLAN["question"], PLAN, llm=CONFIG, client=mock_llm(answer(doc)))
    assert result.synthesizer == "extractive" and result.answer
    assert result.warnings[0].startswith("LLM synthesis failed (none of the synthesis's 2 quotes")
    assert all(c.verified for p in result.answer for c in p.citations)


def test_llm_chinese_question_is_asked_for_chinese_text():
    seen: list = []
    doc = {"synthesized_insights": [{"text": "元数据位于 [project] 表中。",
                                     "citations": [{"source": 2, "quote": "The [project] table holds metadata"}]}]}
    result = llm_synthesis(make_sources(), "pyproject.toml 如何配置？", None, CONFIG, client=mock_llm(answer(doc), seen=seen))
    assert "简体中文" in seen[0]["messages"][1]["content"]
    assert result.language == "zh" and result.synthesized_insights[0].citations[0].verified


def test_unparseable_llm_answer_raises_llm_error_without_fallback():
    client = mock_llm("---THOUGHT---\nI could not decide.\n---JSON---\nno json here")
    with pytest.raises(LLMError, match="no JSON object"):
        synthesize(make_sources(), "q", None, llm=CONFIG, client=client, fallback=False)
    with pytest.raises(LLMError, match="none of answer, synthesized_insights"):
        llm_synthesis(make_sources(), "q", None, CONFIG, client=mock_llm(answer({"answer": "42"})))


def test_unparseable_llm_answer_falls_back_to_extractive_with_a_warning():
    result = synthesize(make_sources(), PLAN["question"], PLAN, llm=CONFIG, client=mock_llm("sorry, no JSON"))
    assert result.synthesizer == "extractive"
    assert result.warnings[0].startswith("LLM synthesis failed (the answer contains no JSON object)")
    assert result.synthesized_insights and all(c.verified for c in result.all_citations())


def test_llm_http_error_falls_back_too():
    result = synthesize(make_sources(), PLAN["question"], PLAN, llm=CONFIG, client=mock_llm(status=503))
    assert result.synthesizer == "extractive" and "HTTP 503" in result.warnings[0]


def test_source_references_resolve_by_number_or_id_only():
    sources = make_sources()
    assert resolve_source(1, sources).source_id == "src1"
    assert resolve_source("S2", sources).source_id == "src2"
    assert resolve_source("[3]", sources).source_id == "src3"
    assert resolve_source("src2", sources).source_id == "src2"
    assert resolve_source("https://peps.python.org/pep-0621/", sources).source_id == "src2"
    for bad in (0, 4, "S4", "src9", True, None, 1.5, "https://elsewhere.example.com"):
        assert resolve_source(bad, sources) is None
    citation = sources[0].cite(0, 14)
    assert isinstance(citation, Citation) and citation.source_number == 1 and citation.domain == "packaging.python.org"


TEXTS = st.text(alphabet=st.sampled_from(list("abc xyz.,:;?!\n#-$/=()0123456789 服务启动命令。，；：？的了")),
                max_size=300)
QUESTIONS = st.sampled_from(["How long does the service take to start?", "What is xyz, and how often is abc run?",
                             "服务怎么启动？多久一次？", "Is abc safe?", "?", "how"])


@settings(max_examples=60, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=3), QUESTIONS)
def test_any_text_gives_a_report_whose_quotes_are_the_sources_own_words(texts, question):
    sources = [Source(number=n, source_id=f"s{n}", url=f"https://x.example/{n}", title=f"Page {n}", content_text=text)
               for n, text in enumerate(texts, start=1)]
    result = extractive_synthesis(sources, question)  # never raises, whatever the sources hold
    by_id = {s.source_id: s for s in sources}
    for citation in result.all_citations():
        assert citation.verified
        assert by_id[citation.source_id].text[citation.start:citation.end] == citation.quote
    assert result.synthesized_insights or [g for g in result.contradictions_or_gaps if g.kind == "gap"]


def test_a_chinese_question_of_two_questions_has_two_parts_whatever_its_interrogative():
    for asked in ("新建文件的默认权限是谁决定的？umask 设成 0022 和 0002 有什么不同？",
                  "怎么让 Debian 自动安装安全更新？unstable 也适合这么做吗？"):
        parts = read_question(asked).parts
        assert len(parts) == 2, asked
    assert "umask" in read_question("新建文件的默认权限是谁决定的？umask 设成 0022 和 0002 有什么不同？").parts[1].words


def test_what_a_chinese_question_does_not_want_is_no_word_a_passage_must_hold():
    words = read_question("想让机器开机直接进命令行，不进图形界面，怎么设置？").parts[0].words
    assert "不进" not in words and any(w.startswith("图形界面") for w in words)


SHUTDOWN_PAGE = ("1.1.7. 怎样退出命令行提示符\n\n在命令行输入Ctrl-D，即可关闭 shell 活动。\n\n"
                 "1.1.8. 怎样关闭系统\n\n就像任何其他的现代操作系统一样，Debian 会通过内存中的缓存数据进行文件操作以提高性能，"
                 "因此在电源被安全地关闭前需要适当的过程。\n\n在普通多用户模式下，可以使用命令行关闭系统。\n\n# shutdown -h now\n\n"
                 "在单用户模式下，可以使用命令行关闭系统。\n\n# poweroff -i -f\n\n1.1.9. 恢复一个正常的控制台\n\n"
                 "当屏幕发狂时，你可以在命令行输入“reset”。")


def test_a_chinese_question_finds_the_answer_worded_otherwise_and_quotes_the_command_after_it():
    """"关机" (shut down) is answered by "关闭系统" (close the system): the
    words differ, the meaning does not. The command the sentence speaks of
    follows its paragraph in a code block (a root prompt, not a heading)."""
    sources = make_sources([("file:///doc/ch01.zh-cn.html", "第 1 章 GNU/Linux 教程", SHUTDOWN_PAGE)])
    result = extractive_synthesis(sources, "用命令行怎么关机？")
    first = result.synthesized_insights[0].citations[0]
    assert "可以使用命令行关闭系统。" in first.quote and first.verified
    assert first.quote.endswith(("# shutdown -h now", "# poweroff -i -f"))
    quoted = " ".join(c.quote for c in result.all_citations())
    assert "shutdown -h now" in quoted and "poweroff -i -f" in quoted
    assert not [g for g in result.contradictions_or_gaps if g.kind == "gap"]
    quotes = [c.quote for insight in result.synthesized_insights for c in insight.citations]
    before_ctrl_d = quotes[:next(k for k, q in enumerate(quotes + ["Ctrl-D"]) if "Ctrl-D" in q)]
    assert all(any(command in q for q in before_ctrl_d) for command in ("shutdown -h now", "poweroff -i -f"))


def test_markdown_table_rows_are_blocks_and_grid_table_lines_are_not_rows():
    """A long Markdown row is not a wrapped line to join with the next; a
    reStructuredText grid table's cells span lines, so its lines are no rows."""
    markdown = ("| Sinking wafers (for the corydoras, at the back) | every other evening, after lights out |\n"
                "| Frozen bloodworms or daphnia | twice a week |\n")
    assert [markdown[s:e] for s, e in block_spans(markdown)] == markdown.strip().split("\n")
    assert len(table_rows(markdown)) == 2
    grid = ("+----------+-------------------------------------------------------+\n"
            "| \"s[i:j]\" | slice of *s* from *i* to *j*, a longer cell that runs |\n"
            "|          | on over the next line of the table                     |\n"
            "+----------+-------------------------------------------------------+\n")
    assert table_rows(grid) == set()


@pytest.mark.parametrize("asked, parts", [
    ("At what nitrate reading should I start to worry, and what should I aim for?",
     ["At what nitrate reading should I start to worry", "what should I aim for?"]),
    ("We're moving house. Can I carry the tank with some water in it, and how do I keep the bacteria alive?",
     ["We're moving house. Can I carry the tank with some water in it", "how do I keep the bacteria alive?"]),
    ("My fish keep gulping at the top of the water. What should I check or do?",
     ["My fish keep gulping at the top of the water. What should I check or do?"]),
    ("Can I use tap water, or do I need RO water?", ["Can I use tap water", "do I need RO water?"]),
    ("Is it safe, and why?", ["Is it safe", "why?"]),
])
def test_an_english_question_is_split_where_a_clause_asks_again(asked, parts):
    """A clause that opens on a preposition and a wh-word asks ("At what …");
    a statement sets the scene for the part after it; a last verb joined by
    "or" ("check or do?") is not a question of its own."""
    assert [p.text for p in read_question(asked).parts] == parts


def test_a_sentence_in_the_section_about_the_question_outranks_one_elsewhere():
    """In documentation the answer is a section about the question, whose
    sentences need not repeat it: of two sentences that hold as much of the
    question, the one whose section holds the rest of it ranks first, though
    the section is too long to be read as one unit."""
    page = ("Networks\n\nA connection can drop at any time on a bad network, and everything "
            "started from it stops with it.\n\nSome providers drop idle connections after an hour.\n\n"
            "Detaching sessions\n\nThe screen program keeps a long job running on a remote host.\n\n"
            + "Each window of screen is a shell of its own, switched to with a key and listed on request. " * 8
            + "\n\nA dropped connection stops nothing started inside it; reattach later with screen -r.\n")
    sources = make_sources([("file:///doc/ch09.html", "System tips", page)])
    question = read_question("How do I keep a long job running when the remote connection drops?")
    found = windows(candidates(sources))
    relevance = score(question, found).relevance[0]
    rank = {found[i].text.split()[0] + found[i].text.split()[1]: relevance[i] for i in range(len(found))}
    assert rank["Adropped"] > rank["Aconnection"]


def test_a_chinese_file_name_is_cited_as_written_not_percent_encoded():
    sources = make_sources([("file:///notes/%E5%88%B9%E8%BD%A6%E7%89%87.md", "刹车片",
                             "# 刹车片\n\n刹车片一般每行驶三万公里检查一次，磨到三毫米以下就要更换。\n")])
    result = extractive_synthesis(sources, "刹车片多久检查一次？")
    finding = result.synthesized_insights[0]
    assert finding.text.startswith("刹车片.md 指出")
    assert {c.domain for c in result.all_citations()} == {"刹车片.md"}
