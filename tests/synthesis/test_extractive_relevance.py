"""What a reader of the extractive report relies on: the sentences quoted
answer the question (not a title, not a sentence sharing one common word),
findings are filed under the question's own parts, one page is one source,
data points are measures, and a question the sources do not cover is said
to be one."""

from __future__ import annotations

from tasks.synthesis.base import Source
from tasks.synthesis.candidates import candidates, windows
from tasks.synthesis.evidence import score
from tasks.synthesis.extractive import ExtractiveOptions, extractive_synthesis
from tasks.synthesis.question import FREQUENCY, QUANTITY, asks_for, read_question
from tasks.reporting.layout import caution

DATAMODEL = "https://docs.python.org/3.11/reference/datamodel.html"

GC_PAGE = (
    "Objects, values and types\n"
    "*************************\n\n"
    "Objects are Python's abstraction for data. Python does not support single-precision floating\n"
    "point numbers; the savings in processor and memory usage are not worth it.\n\n"
    "Objects are never explicitly destroyed; however, when they become unreachable they may be\n"
    "garbage-collected.\n\n"
    "CPython currently uses a reference-counting scheme with (optional) delayed detection of\n"
    "cyclically linked garbage, which collects most objects as soon as they become unreachable,\n"
    "but is not guaranteed to collect garbage containing circular references.\n\n"
    "The cyclic garbage collector detects reference cycles and deletes the objects in them when\n"
    "no outside reference keeps them alive.\n"
)
EXCEPTIONS_PAGE = (
    "The try statement\n*****************\n\n"
    "Each clause executes at most once and handles an exception group of all matching exceptions.\n"
    "Python evaluates the expression in the except clause when the clause is reached.\n"
)


def source(n: int, url: str, title: str, text: str, score: float = 0.5) -> Source:
    return Source(number=n, source_id=f"s{n}", url=url, title=title, content_text=text, score=score)


def quotes(result) -> list[str]:
    """The quotes of the evidence: the passages below the answer."""
    return [" ".join(c.quote.split()) for insight in result.synthesized_insights for c in insight.citations]


def first_quote(url: str, title: str, text: str, question: str) -> str:
    """The first quote of the answer to `question` from one page."""
    return quotes(extractive_synthesis([source(1, url, title, text)], question))[0]


def quote_holding(url: str, title: str, text: str, question: str, holding: str) -> tuple[str, list[str]]:
    """The quote of the answer to `question` from one page that holds
    `holding`, and all the answer's quotes."""
    quoted = quotes(extractive_synthesis([source(1, url, title, text)], question))
    return next(q for q in quoted if holding in q), quoted


def test_quotes_answer_the_question_and_never_a_title_or_a_one_word_match():
    sources = [source(1, f"{DATAMODEL}?topic=objects#objects", "Objects, values and types", GC_PAGE),
               source(2, "https://docs.python.org/3.11/reference/compound_stmts.html?topic=try#try",
                      "The try statement", EXCEPTIONS_PAGE)]
    result = extractive_synthesis(sources, "How does Python's garbage collector handle reference cycles?")
    quoted = quotes(result)
    assert ("The cyclic garbage collector detects reference cycles and deletes the objects in them when no outside "
            "reference keeps them alive.") in quoted[0]
    assert not [q for q in quoted if "single-precision" in q or "exception group" in q or "except clause" in q]
    assert "Objects, values and types" not in quoted and "The try statement" not in quoted
    for citation in result.all_citations():
        text = next(s for s in sources if s.source_id == citation.source_id).content_text
        assert text[citation.start:citation.end] == citation.quote  # verbatim, hard wraps and all


def test_findings_are_filed_under_the_parts_of_the_question_never_a_stem_or_a_framing_word():
    text = ("A decorator is a callable that takes a function and returns a replacement function.\n\n"
            "Decorator expressions are evaluated when the function is defined.\n")
    sources = [source(1, "https://docs.python.org/3.11/glossary.html", "Glossary", text)]
    for question in ("How do decorators work?", "How does a decorator work?"):
        result = extractive_synthesis(sources, question)
        assert result.synthesized_insights, question
        assert {i.dimension for i in result.synthesized_insights} == {None}  # one question: no made-up label
    two = "When are decorator expressions evaluated, and what does a decorator return?"
    labels = {i.dimension for i in extractive_synthesis(sources, two).synthesized_insights}
    assert labels <= {"When are decorator expressions evaluated", "what does a decorator return"}, labels
    assert len(labels) == 2


def test_two_topics_of_one_page_are_one_source_and_another_page_corroborates():
    shared = "The cyclic garbage collector detects reference cycles and deletes the objects in them."
    one_page = [source(1, f"{DATAMODEL}?topic=customization#customization", "Basic customization",
                       f"Intro to customization hooks for classes.\n\n{shared}\n"),
                source(2, f"{DATAMODEL}?topic=specialnames#specialnames", "Special method names",
                       f"Special methods are looked up on the type.\n\n{shared}\n")]
    question = "How does the garbage collector handle reference cycles?"
    alone = extractive_synthesis(one_page, question).synthesized_insights[0]
    assert "other source" not in alone.text
    assert len(alone.citations) == 1

    mirror = source(3, "https://mirror.example.org/gc.html", "GC notes", f"Notes.\n\n{shared}\n")
    both = extractive_synthesis([*one_page, mirror], question).synthesized_insights[0]
    assert "and 1 other source" in both.text
    assert {c.url.split("?")[0] for c in both.citations} == {DATAMODEL, "https://mirror.example.org/gc.html"}


def test_only_measures_are_key_data_points():
    text = ("The modulo operator always yields a result with the same sign as its second operand. For example, "
            "-1e-100 % 1e100 has the same sign as 1e100, in order that -1e-100 % 1e100 is 1e100-1e-100.\n\n"
            "Changed in version 3.11: the modulo operator of Python 3.11 is described in section 6.7.\n\n"
            "The modulo operator on floats took 12 ms per million operations in the benchmark.\n")
    sources = [source(1, "https://docs.python.org/3.11/reference/expressions.html", "Expressions", text)]
    result = extractive_synthesis(sources, "How does the modulo operator work on floats?")
    points = [(p.value, p.unit) for p in result.key_data_points]
    assert points == [(12.0, "ms")]
    assert "modulo operator on floats" in result.key_data_points[0].measure


def test_a_heading_that_asks_for_the_kind_of_answer_wanted_ranks_its_sentences_higher():
    """Notes file their answers under the question's own interrogative:
    "How much and how often" above "Adults: once or twice a day"."""
    assert asks_for("How much and how often", FREQUENCY) and asks_for("How much and how often", QUANTITY)
    assert asks_for("1.1.7. 多久换一次水", FREQUENCY) and not asks_for("Sunday log", FREQUENCY)
    for heading, question in [("How often", "How often should I clean the filter?"),
                              ("多久清洗一次", "过滤器应该多久清洗一次？")]:
        said = "Clean the filter every four weeks." if question.isascii() else "每四周清洗一次过滤器。"
        page = f"Sunday log\n\n{said}\n\n{heading}\n\n{said}\n"
        found = windows(candidates([source(1, "https://notes.example.org/filter", "Filter care", page)]))
        relevance = score(read_question(question), found).relevance[0]
        assert [w.lead.heading for w in found] == ["Sunday log", heading]
        assert relevance[1] > relevance[0]


def test_a_figure_in_a_sentence_that_barely_touches_the_question_is_no_key_data_point():
    """Key data points come from the evidence that answers: the bakery's
    "40 kg of dough" shares one word with a question about resting dough."""
    page = ("Resting dough\n\nAfter kneading, let the bread dough rest for 45 minutes at room temperature, covered.\n\n"
            "Our bakery\n\nThe bakery down the road sells 300 loaves of bread a day from an oven built for 40 kg of dough.\n")
    result = extractive_synthesis([source(1, "https://bread.example.org/dough", "Bread notes", page)],
                                  "How long should bread dough rest?")
    assert [(p.value, p.unit) for p in result.key_data_points] == [(45.0, "minutes")]


def test_a_question_the_sources_do_not_cover_says_so_and_quotes_nothing():
    sources = [source(1, f"{DATAMODEL}?topic=objects#objects", "Objects, values and types", GC_PAGE)]
    result = extractive_synthesis(sources, "How do I bake sourdough bread?")
    assert result.synthesized_insights == [] and result.key_data_points == [] and result.all_citations() == []
    gaps = [g.description for g in result.contradictions_or_gaps if g.kind == "gap"]
    assert gaps == ["The sources found do not answer this question: no passage in them speaks to what it asks, "
                    "so nothing is quoted."]


def test_the_answering_sentence_of_a_page_is_quoted_not_its_first_match():
    text = ("Decorators appear in the list of compound statement features.\n\n"
            "Functions are first-class objects in Python.\n\n"
            "A function decorator is applied when the def statement executes: the decorator is called with the "
            "function object and its result is bound to the function name.\n")
    sources = [source(1, "https://docs.python.org/3.11/reference/compound_stmts.html", "Function definitions", text)]
    result = extractive_synthesis(sources, "When is a function decorator applied to the function?")
    assert quotes(result)[0].startswith("A function decorator is applied when the def statement executes")


def test_a_sphinx_page_and_its_source_file_are_one_document():
    shared = "Tasks are used to schedule coroutines concurrently in the event loop."
    docs = "file:///usr/share/doc/python3.11/html"
    sources = [source(1, f"{docs}/library/asyncio-task.html", "Coroutines and Tasks", f"Intro.\n\n{shared}\n"),
               source(2, f"{docs}/_sources/library/asyncio-task.rst.txt", "Coroutines and Tasks", f"{shared}\n")]
    insight = extractive_synthesis(sources, "How are coroutines scheduled concurrently?").synthesized_insights[0]
    assert "other source" not in insight.text and len(insight.citations) == 1


def test_a_faq_question_is_no_evidence_and_the_defining_sentence_leads():
    text = ("Why don't generators support the with statement?\n\n"
            "The try statement specifies exception handlers for a group of statements.\n\n"
            "If the return value was true, the exception is suppressed, and execution continues with the\n"
            "statement following the with statement.\n\n"
            "The with statement is used to wrap the execution of a block with methods defined by a\n"
            "context manager.\n")
    sources = [source(1, "https://docs.python.org/3.11/reference/compound_stmts.html", "Compound statements", text)]
    quoted = quotes(extractive_synthesis(sources, "What does the with statement do?"))
    assert quoted[0].startswith("The with statement is used to wrap the execution of a block")
    assert not [q for q in quoted if q.endswith("?")]


def test_both_pages_that_answer_are_quoted_at_their_answering_sentence():
    yield_page = ("Yield expressions\n*****************\n\n"
                  "When a generator function is called, it returns an iterator known as a generator, which then "
                  "controls the execution of the generator function.\n")
    types_page = ("The standard type hierarchy\n***************************\n\n"
                  "Functions are first-class objects in Python.\n\n"
                  "A generator function is a function which uses the yield statement; calling a generator function "
                  "always returns an iterator object which can be used to execute the body of the function.\n")
    ranked = [source(1, f"{DATAMODEL}?topic=types#types", "The standard type hierarchy", types_page),
              source(2, "https://docs.python.org/3.11/reference/expressions.html?topic=yieldexpr#yieldexpr",
                     "Yield expressions", yield_page)]
    result = extractive_synthesis(ranked, "What does calling a generator function return?")
    leads = {i.citations[0].source_id: i.citations[0].quote for i in result.synthesized_insights}
    assert set(leads) == {"s1", "s2"}  # both pages answer
    assert leads["s1"].startswith("A generator function is a function which uses the yield statement")
    assert leads["s2"].startswith("When a generator function is called, it returns an iterator")
    assert not [q for q in quotes(result) if "first-class" in q]  # its rank quotes no off-topic sentence


TYPES_PAGE = ("The standard type hierarchy\n***************************\n\n"
              "They are valid numeric literals which, when passed to their class constructor, produce an object "
              "having the numeric value.\n\n"
              "A function or method which uses the yield statement is called a generator function; calling it "
              "returns an iterator.\n")
FORMAT_PAGE = ("Format specification\n********************\n\n"
               "A general convention is that an empty format specification produces the same result as str().\n")


TYPES_AND_FORMAT = [source(1, f"{DATAMODEL}?topic=types#types", "The standard type hierarchy", TYPES_PAGE),
                    source(2, "https://docs.python.org/3.11/library/string.html?topic=formatstrings#formatstrings",
                           "Format specification", FORMAT_PAGE)]


def test_sources_that_only_touch_the_question_are_quoted_from_the_page_closest_to_it():
    result = extractive_synthesis(TYPES_AND_FORMAT,
                                  "Why does a generator function keep its local variables between values?")
    lead = result.synthesized_insights[0].citations[0]
    assert lead.source_id == "s1" and lead.verified
    assert lead.quote.startswith("A function or method which uses the yield statement")  # not the literals one
    assert TYPES_PAGE[lead.start:lead.end] == lead.quote
    assert not [q for q in quotes(result) if "format specification" in q]  # the other page is not about it


def whole_question_gaps(result) -> list[str]:
    return [g.description for g in result.contradictions_or_gaps if g.kind == "gap" and not g.dimension]


def test_a_question_naming_what_no_source_mentions_is_answered_with_a_caution_naming_it():
    result = extractive_synthesis(TYPES_AND_FORMAT, "How do I read the rows of a CSV file with a generator?")
    assert whole_question_gaps(result) == [
        "The sources found may not answer this question: none of them mentions “CSV”."]
    generators = source(1, "file:///docs/generators.md", "生成器",
                        "# 生成器\n\n使用 yield 语句的函数称为生成器函数；调用生成器函数会返回一个迭代器。\n")
    chinese = extractive_synthesis([generators], "怎么用 Flatpak 运行生成器函数？")
    assert whole_question_gaps(chinese) == ["找到的来源可能没有回答这个问题：其中没有一处提到 “Flatpak”。"]
    assert whole_question_gaps(extractive_synthesis([generators], "生成器函数返回什么？")) == []
    # a common word the sources lack is wording, not a name; a name in a title or heading is mentioned
    assert whole_question_gaps(extractive_synthesis(
        TYPES_AND_FORMAT, "Does a generator function kept in a bucket return an iterator?")) == []
    assert whole_question_gaps(extractive_synthesis(
        TYPES_AND_FORMAT, "Which numeric literal does the standard type hierarchy list?")) == []


ACROSS_ZH = "找到的来源可能没有回答这个问题：它们是用另一种语言写的，所引用的段落是按意思跨语言选出的，而不是按问题的词语。"


def test_sources_in_another_language_are_quoted_where_they_mean_what_the_question_asks_under_a_caution():
    english = [source(1, f"{DATAMODEL}?topic=objects#objects", "Objects, values and types", GC_PAGE),
               source(2, "https://docs.python.org/3.11/library/pdb.html", "pdb — The Python Debugger",
                      "The module pdb defines an interactive source code debugger for Python programs.\n\n"
                      "Restart the debugged Python program.\n")]
    cycles = extractive_synthesis(english, "垃圾回收器如何处理循环引用？")  # not a word of it in the pages
    assert whole_question_gaps(cycles) == [ACROSS_ZH] and caution(cycles) == ACROSS_ZH
    assert "cyclic garbage collector" in cycles.answer[0].text
    restart = extractive_synthesis(english, "怎样重新启动被调试的程序？")
    assert caution(restart) == ACROSS_ZH and "Restart the debugged Python program" in restart.answer[0].text
    chinese = [source(1, "file:///docs/gc.md", "垃圾回收",
                      "# 垃圾回收\n\nCPython 使用引用计数，并用循环垃圾回收器检测引用循环。\n\n"
                      "也可以手动运行回收。\n")]
    english_question = extractive_synthesis(chinese, "How does CPython's gc handle reference cycles?")
    assert caution(english_question) == (
        "The sources found may not answer this question: they are in another language, and the passages quoted "
        "were chosen by what they mean, read across languages, not by its words.")
    assert "循环垃圾回收器" in english_question.answer[0].text


def test_a_question_whose_words_the_other_language_sources_hold_is_answered_from_them():
    # mostly English sentences (options, commands) but a Chinese word of the question among them: a Chinese page
    page = source(1, "file:///man/zh/ls.1", "ls 命令",
                  "# ls\n\nls -l lists in long format.\n\nls -a shows entries starting with a dot.\n\n"
                  "ls -R lists subdirectories recursively.\n\n用 -a 选项显示隐藏文件。\n")
    result = extractive_synthesis([page], "ls 怎么显示隐藏文件？")
    assert whole_question_gaps(result) == []
    assert any("隐藏文件" in q for q in quotes(result))
    # an English question over English pages is never said to be in another language
    english = extractive_synthesis([source(1, f"{DATAMODEL}?topic=objects#objects", "Objects", GC_PAGE)],
                                   "Does CPython collect reference cycles?")
    assert "another language" not in " ".join(whole_question_gaps(english))


def test_an_answer_held_by_few_of_the_question_s_words_quotes_the_close_second_page_too():
    """No part answered clearly by the question's words: the closest
    passages come from every page whose evidence is close to the lead's —
    here the lead ("what they are fed") is on the wrong page."""
    checklist = ("Checklist for the fish shop\n\nBefore buying:\n"
                 "  [ ] Ask how long they have been in the shop. I prefer fish that\n"
                 "      have been there at least a week (the worst deaths happen in\n      the first days after shipping).\n"
                 "  [ ] Ask what they are fed and try to see them eat.\n"
                 "  [ ] Ask about adult size and the group size they need.\n")
    away = ("Feeding while away\n\nHealthy adult fish in an established tank can go a week without food\n"
            "without any problem - I have done 7 days twice. For anything up to a\nweek I just don't feed.\n\n"
            "For longer (2 weeks in August):\n"
            "  - pre-portion each day's food into a pill organiser and ask the\n"
            "    neighbour to feed every other day ONE compartment only. People who\n    don't keep fish always overfeed.\n"
            "  - no \"holiday feeder\" blocks. Tried one once, half of it dissolved and\n    the water went cloudy.\n")
    result = extractive_synthesis([source(1, "file:///notes/buying-fish-checklist.txt", "buying-fish-checklist", checklist),
                                   source(2, "file:///notes/vacation-feeding.txt", "vacation-feeding", away)],
                                  "Who makes sure my fish are fed while I am on holiday for two weeks?")
    insights = result.synthesized_insights
    assert "[ ] Ask what they are fed" in insights[0].citations[0].quote  # the lead, with the list it is in
    assert any(i.citations[0].source_id == "s2" for i in insights)


def test_a_multi_part_question_gets_each_part_answered_or_named_as_a_gap():
    text = ("# Sourdough\n\nLet the dough rest for 30 to 45 minutes before shaping.\n\n"
            "Bake it in the oven at 230 °C for the first 20 minutes with the lid on.\n")
    sources = [source(1, "file:///notes/sourdough.md", "Sourdough", text)]
    result = extractive_synthesis(sources, "How long should the dough rest, and what temperature is the oven?")
    said = " ".join(i.text for i in result.synthesized_insights)
    assert "30 to 45 minutes" in said and "230 °C" in said  # each part: a duration, a temperature
    assert not [g for g in result.contradictions_or_gaps if g.kind == "gap"]
    missing = extractive_synthesis(sources, "How long should the dough rest, and which flour gives the best crust?")
    gaps = [g.description for g in missing.contradictions_or_gaps if g.kind == "gap"]
    assert gaps == ["The sources do not answer this part of the question: “which flour gives the best crust”."]


def test_a_partial_passage_never_displaces_a_sentence_that_covers_the_question():
    answer = ("Generators\n**********\n\n"
              "A generator function produces values one at a time: each yield hands one value to the caller.\n")
    sources = [source(1, f"{DATAMODEL}?topic=types#types", "The standard type hierarchy", TYPES_PAGE),
               source(2, "https://docs.python.org/3.11/reference/expressions.html?topic=yield#yield",
                      "Yield expressions", answer)]
    result = extractive_synthesis(sources, "How does a generator function produce values one at a time?")
    assert not [i for i in result.synthesized_insights if "covers only part" in i.text]
    assert result.synthesized_insights[0].citations[0].quote.startswith("A generator function produces values")
    assert not [g for g in result.contradictions_or_gaps if g.description.startswith("The sources found")]


def test_a_sentence_naming_what_came_before_is_quoted_with_it():
    """"… none of these bacteria, which is why …" is half a statement
    without the sentence that says which bacteria; "Instead: …" without what
    it replaces."""
    cycle = ("Fish waste and leftover food break down into ammonia, which is toxic. Bacteria in the filter turn "
             "ammonia into nitrite, and a second group of bacteria turn nitrite into nitrate. A new tank has none "
             "of these bacteria, which is why fish die in \"new tank syndrome\".")
    result = extractive_synthesis([source(1, "file:///notes/nitrogen-cycle.md", "The nitrogen cycle", cycle)],
                                  "What does 'new tank syndrome' actually mean?")
    assert "Bacteria in the filter turn ammonia into nitrite" in quotes(result)[0]

    nitrate = ("Do not change 90% of the water at once: it changes the pH so quickly that it can shock the fish. "
               "Instead: a 50% change, then another 50% change the next day.")
    result = extractive_synthesis([source(1, "file:///notes/nitrate.md", "Nitrate too high", nitrate)],
                                  "Nitrate is at 80. What water change brings it down?")
    assert any("shock the fish. Instead: a 50% change" in q for q in quotes(result))


WATER_PAGE = (
    "Target water parameters\n\nWhat I aim for in the tropical community tank.\n\n"
    "| Parameter | Target | Worry if |\n| --- | --- | --- |\n"
    "| Temperature | 24-26 °C | below 22 or above 28 °C |\n"
    "| pH | 6.8-7.6 | it moves more than 0.3 in a day |\n"
    "| Nitrate | under 20 ppm | above 40 ppm |\n\n"
    "Stable parameters matter more than hitting an exact number; the temperature of the tank itself is set "
    "on the heater.\n"
)


def test_a_table_row_that_answers_is_quoted_with_its_columns_never_the_header():
    """Tables hold the figures people ask for; a row is quoted whole (its
    cells, verbatim, not running on into the next rows), and the header row
    says what the cells are and is never quoted itself."""
    result = extractive_synthesis([source(1, "file:///notes/water.md", "Target water parameters", WATER_PAGE)],
                                  "What temperature should the tropical tank be kept at?")
    row = next(i for i in result.synthesized_insights if i.citations[0].quote.startswith("Temperature"))
    assert row.citations[0].quote == "Temperature | 24-26 °C | below 22 or above 28 °C"
    assert row.text.endswith("(from a table whose columns are: Parameter | Target | Worry if)")
    assert not [q for q in quotes(result) if "Parameter | Target" in q]


def test_chinese_table_rows_answer_a_chinese_question():
    page = ("表 5.6. 最佳 MTU 值的基本指引方法\n\n| 网络环境 | MTU | 基本原理 |\n| --- | --- | --- |\n"
            "| 拨号连接(IP: PPP) | 576 | 标准的 |\n| 以太网连接 (IP: DHCP 或固定) | 1500 | 默认标准值 |\n\n"
            "除了这些基本的指引方法外，你还应当知道下面的信息。\n")
    result = extractive_synthesis([source(1, "file:///doc/ch05.html", "第 5 章 网络设置", page)],
                                  "以太网和拨号连接的 MTU 一般设多少？")
    said = " ".join(i.text for i in result.synthesized_insights)
    assert "以太网连接 (IP: DHCP 或固定) | 1500 | 默认标准值" in said and " | | " not in said
    assert "（摘自表格，各列为：网络环境 | MTU | 基本原理）" in result.synthesized_insights[0].text


def test_rows_that_answer_together_are_one_quote_told_apart_row_by_row():
    page = ("9.4.12. 杀死一个进程\n\n使用 kill(1) 通过进程 ID 来杀死（发送一个信号）一个进程。\n\n表 9.11. kill 命令常用信号列表\n\n"
            "| 信号值 | 信号名 | 操作 | 注释 |\n| --- | --- | --- | --- |\n| 1 | SIGHUP | 终止进程 | 从终端断开连接（信号 挂起） |\n"
            "| 9 | SIGKILL | 终止进程 | 不可阻塞的 kill 信号 |\n| 15 | SIGTERM | 终止进程 | 可被阻塞的终止信号 |\n")
    result = extractive_synthesis([source(1, "file:///doc/ch09.html", "第 9 章 系统技巧", page)],
                                  "kill -9 和 kill -15 有什么区别？")
    first = result.synthesized_insights[0]
    assert "“9 | SIGKILL | 终止进程 | 不可阻塞的 kill 信号；15 | SIGTERM | 终止进程 | 可被阻塞的终止信号”" in first.text
    assert first.citations[0].quote in page and "SIGHUP" not in first.text  # verbatim; the row that does not answer stays out


def test_a_paragraph_that_fits_is_quoted_from_its_start():
    """The sentence that answers often builds on the ones before it in its
    paragraph ("Installing unattended-upgrades …" then "If you run unstable,
    …"); a reader needs them, and the quote is still the paragraph verbatim."""
    page = ("Automatic upgrades\n\nThe apt package has its own cron script that downloads packages. "
            "Installing unattended-upgrades makes it upgrade them too. "
            "If you run unstable, you do not want automatic updates: they will break the system some day.\n\n"
            "Other notes\n\nKeep backups of /etc before any upgrade of the release.\n")
    result = extractive_synthesis([source(1, "file:///doc/apt.html", "Package management", page)],
                                  "Is it a good idea to turn on automatic updates on unstable?")
    assert quotes(result)[0].startswith("The apt package has its own cron script")
    assert quotes(result)[0].endswith("they will break the system some day.")
    # a first sentence that points back past its paragraph ("This means …") is not where a quote starts
    pointing = page.replace("The apt package has its own cron script that downloads packages.",
                            "This means the cron script downloads packages.")
    result = extractive_synthesis([source(1, "file:///doc/apt.html", "Package management", pointing)],
                                  "Is it a good idea to turn on automatic updates on unstable?")
    assert quotes(result)[0].startswith("Installing unattended-upgrades makes it upgrade them too.")


def test_a_sentence_that_introduces_a_list_is_quoted_with_its_items():
    """"Here are the objects considered false:" answers nothing by itself;
    its short items are what a reader asked for, and an item is never taken
    for a heading (the context of what follows) however short it is."""
    page = ("Truth value testing\n\nAny object can be tested for truth value, for use in an if or while "
            "condition. Here are most of the built-in objects considered false:\n\n"
            "* constants defined to be false: None and False\n\n"
            "* zero of any numeric type: 0, 0.0, 0j\n\n"
            "* empty sequences and collections: '', (), []\n\n"
            "Operations with a Boolean result always return 0 or False for false, unless otherwise stated.\n")
    first = first_quote("https://docs.python.org/3/library/stdtypes.html", "Built-in Types", page,
                        "Which values count as false in an if condition?")
    assert first.startswith("Any object can be tested")
    assert "None and False" in first and "zero of any numeric type" in first and "empty sequences" in first
    # numbered steps after a sentence that introduces them are items too, and "4. Control Flow" stays a heading
    steps = ("4. Executing the import statement\n\nThe basic import statement is executed in two steps:\n\n"
             "1. find a module, loading and initializing it if necessary\n\n"
             "2. define a name or names in the local namespace\n\n"
             "When the statement contains multiple clauses, the steps are carried out separately for each clause.\n")
    first = first_quote("https://docs.python.org/3/reference/simple_stmts.html", "Simple statements", steps,
                        "How is an import statement executed?")
    assert "1. find a module" in first and "2. define a name" in first
    # items too short to stand as evidence of their own ("小写字母") are quoted after the sentence introducing them
    page = ("4.3. 好密码\n\n在系统安装时建立一个账号或使用 passwd(1) 命令时，你应该选择一个好密码，它应该由 6 到 8 个字符组成，"
            "其中包含下列根据 passwd(1) 设定的每个组合中的一个或多个字符。\n\n- 小写字母\n\n- 数字 0 到 9\n\n- 标点符号\n\n"
            "4.4. 设立加密的密码\n\n下面是一些用于生成加盐的加密密码的独立工具。\n")
    first = first_quote("file:///usr/share/doc/debian-reference/ch04.zh-cn.html", "第 4 章 认证", page,
                        "密码应该包含哪些字符？")
    assert "你应该选择一个好密码" in first and "- 小写字母" in first and "- 标点符号" in first


def test_a_short_section_goes_on_past_its_code_when_the_next_paragraph_speaks_to_the_question():
    """A short section of prose and commands is one answer: the quote does
    not stop at the first command and leave the second for another quote."""
    page = ("1.1.12. sudo 配置\n\n对于典型的单用户工作站，通常简单地配置 sudo(8) 来使非特权用户（例如用户 penguin）"
            "只需输入用户密码而非 root 密码就能获得管理员权限。\n\n# echo \"penguin ALL=(ALL) ALL\" >> /etc/sudoers\n\n"
            "另外，可以使用下列命令使非特权用户（例如用户 penguin）无需密码就获得管理员权限。\n\n"
            "# echo \"penguin ALL=(ALL) NOPASSWD:ALL\" >> /etc/sudoers\n\n"
            "1.1.13. 休息一下\n\n现在是时候休息一下了，你已经学会了很多东西。\n")
    result = extractive_synthesis([source(1, "file:///usr/share/doc/debian-reference/ch01.zh-cn.html",
                                          "第 1 章 GNU/Linux 教程", page)], "怎么配置 sudo 让普通用户获得管理员权限？")
    first = quotes(result)[0]
    assert first.startswith("对于典型的单用户工作站") and first.endswith("NOPASSWD:ALL\" >> /etc/sudoers")
    assert "休息" not in " ".join(quotes(result))


def test_a_compound_the_source_wrapped_after_its_hyphen_reads_whole():
    """The reference's text wraps at 72 columns, sometimes inside
    "reference-counting"; the insight reads it whole, and the citation
    stays the stored text verbatim."""
    page = GC_PAGE.replace("uses a reference-counting scheme", "uses a reference-\ncounting scheme")
    result = extractive_synthesis([source(1, DATAMODEL, "Data model", page)],
                                  "How does CPython collect garbage with reference counting?")
    said = " ".join(i.text for i in result.synthesized_insights)
    assert "reference-counting scheme" in said and "reference- counting" not in said
    assert any("reference-\ncounting" in c.quote and c.verified for c in result.all_citations())


def test_a_framing_word_that_is_the_subject_counts_in_the_choice_of_evidence():
    # "comparison" and "handle" frame many questions and the index leaves them out, but they can be
    # what a question asks about; the choice of evidence weighs them by how common they are
    from tasks.common.text import terms

    question = read_question("How can my objects customize comparison with == and <?")
    assert "comparison" in question.parts[0].words and terms("comparison") == []
    text = ("Objects customize comparison by defining rich comparison methods such as __lt__.\n\n"
            "Objects can customize attribute access by defining __getattr__.\n")
    found = [w for w in windows(candidates([source(1, DATAMODEL, "Basic customization", text)])) if w.first == w.last]
    coverage = score(question, found).own[0]
    answer, attribute_access = (next(i for i, w in enumerate(found) if w.text.startswith(start))
                                for start in ("Objects customize comparison", "Objects can customize attribute"))
    assert coverage[answer] > coverage[attribute_access]
    assert "handl" in read_question("How does the garbage collector handle reference cycles?").parts[0].words


DISK_CHAPTER = ("9.6.3. 硬盘分区配置\n\n尽管 fdisk(8) 一直是硬盘分区的标准工具，但现在 parted(8) 替代了它。\n\n"
                "如果你要建立原始硬盘的一个硬盘分区的映像，你需要使用 “/dev/sda1” 替代 “/dev/sda”。\n\n"
                "使用 LVM2 的话，硬盘分区可以创建在逻辑卷上来替代物理硬盘。\n\n"
                "9.6.4. 硬盘空间\n\n硬盘空间的使用情况可以通过 df(1) 和 du(1) 来评估。\n\n"
                "固态硬盘（Solid state drive，SSD）目前可以被自动检测。\n\n"
                "如果你使用 SCSI 或串行 ATA 设备作为启动硬盘，你需要使用 “/dev/sda” 替代 “/dev/hda”。\n\n"
                "9.6.5. 硬盘映像\n\n你也可以选择挂载一个空硬盘映像文件作为一个循环设备。\n\n"
                "硬盘上未使用的区域可能仍然包含可被擦除的数据，这些可以通过重写来清除。\n\n"
                "在 /etc/fstab 里面，将易失性数据路径挂载为 “tmpfs”，可以减少不必要的磁盘访问。\n\n"
                "9.6.11. 使用 SMART 预测硬盘故障\n\n"
                "检查 “smartctl -a /dev/sda” 的输出，看 SMART 功能是否已启用。\n\n"
                "smartd(8) 守护进程会定期检查，在出现警告时通过邮件通知你。\n")


def test_a_sentence_that_answers_in_other_words_is_quoted():
    # 提前发现 / 坏了 against 预测 / 故障 / 检查: the answer shares one word (硬盘) with the question, as
    # every sentence about partitions and disk space does; the sentence model reads the meaning
    result = extractive_synthesis([source(1, "file:///doc/ch09.zh-cn.html", "第 9 章 系统技巧", DISK_CHAPTER)],
                                  "怎么提前发现硬盘快要坏了？")
    said = quotes(result)
    assert any("smartctl" in q or "smartd(8)" in q for q in said) and all(c.verified for c in result.all_citations())
    assert not any("df(1)" in q for q in said)  # disk space: a word in common, not the meaning


WITH_SECTION = ("The with statement\n******************\n\n"
                "The with statement is used to wrap the execution of a block with methods defined by a context "
                "manager. This allows common try and finally usage patterns to be encapsulated for reuse.\n\n"
                "The execution of the with statement proceeds as follows:\n\n"
                "1. The context manager's __enter__() method is invoked.\n\n"
                "2. The with statement guarantees that if the __enter__() method returns without an error, then "
                "__exit__() will always be called.\n\n"
                "3. The suite is executed.\n\n"
                "4. The context manager's __exit__() method is invoked. If an exception caused the suite to be "
                "exited, its type, value, and traceback are passed as arguments to __exit__().\n\n"
                "5. If the return value was true, the exception is suppressed.\n\n"
                "Operator precedence\n*******************\n\n"
                "Operators in the same box group left to right, except for exponentiation.\n")


def test_a_quote_is_the_passage_around_the_answering_sentence():
    # the words choose step 2 ("guarantees … always be called"); the steps before and after it, in the same
    # section, say how: a reader of documentation reads the passage, not one sentence of it
    lead, quoted = quote_holding("https://docs.python.org/3.11/reference/compound_stmts.html", "Compound statements",
                                 WITH_SECTION, "How does a with statement make sure cleanup code runs?",
                                 "will always be called")
    assert "__enter__() method is invoked" in lead and "traceback are passed as arguments" in lead
    assert not [q for q in quoted if "exponentiation" in q]  # never past the section


UTF8_SECTION = ("11.1.2. 检查文件是不是 UTF-8 编码\n\n"
                "你能够通过下面的命令检查一个文本文件是不是用 UTF-8 编码的。\n\n"
                "$ iconv -f utf8 -t utf8 input.txt >/dev/null || echo \"non-UTF-8 found\"\n\n"
                "提示\n\n"
                "在上面的例子中使用 \"--verbose\" 参数来找到第一个 non-UTF-8 字符。\n\n"
                "11.1.3. 使用 iconv 转换文件名\n\n"
                "这里是一个示例脚本，将在老的操作系统下创建的文件名编码转换为现代 UTF-8。\n")


def test_a_note_is_read_with_the_section_it_sits_in():
    # "提示" (tip) stands alone on its line like a heading; it labels a note of the section above it
    lead, _ = quote_holding("file:///doc/ch11.zh-cn.html", "第 11 章 数据转换", UTF8_SECTION,
                            "怎么判断一个文本文件是不是 UTF-8 编码的？", "检查一个文本文件是不是用 UTF-8 编码的")
    assert "iconv -f utf8 -t utf8" in lead and "--verbose" in lead


HASH_METHOD = ("object.__hash__(self)\n\n"
               "   Called by built-in function hash() and for operations on members of hashed collections. Objects "
               "which compare equal must have the same hash value. Example:\n\n"
               "      def __hash__(self):\n"
               "          return hash((self.name, self.nick))\n\n"
               "   A class that overrides __eq__() and does not define __hash__() has its hash set to None: its "
               "instances will not be usable as items in hashable collections.\n")


def test_a_line_of_code_indented_under_a_paragraph_is_not_a_heading():
    # "return hash((self.name, self.nick))" is short and ends on no full stop, like a title; indented under the
    # description it is part of, it is code, and the passage after it belongs to the same method
    lead, _ = quote_holding("https://docs.python.org/3.11/reference/datamodel.html", "Basic customization",
                            HASH_METHOD, "What must the hash of objects that compare equal be?",
                            "must have the same hash value")
    assert "will not be usable as items in hashable collections" in lead


def test_a_later_part_that_names_no_subject_is_read_as_about_the_one_before():
    """"怎么转换？" after a question about line endings asks how to convert
    line endings: its lead is the converter of line endings, not the first
    page about converting something else."""
    encodings = ("# 编码转换\n\n用 iconv 转换文件的编码，例如把 GBK 转换成 UTF-8。\n\n"
                 "转换之前先备份文件，转换失败时 iconv 会报告出错的位置。\n")
    endings = ("# 换行符\n\nWindows 的换行符是 CR-LF，Linux 的换行符是 LF。\n\n"
               "# 工具\n\nfromdos 和 todos 命令在两种换行符之间转换文本文件。\n")
    result = extractive_synthesis([source(1, "file:///notes/encoding.md", "编码", encodings),
                                   source(2, "file:///notes/line-endings.md", "换行符", endings)],
                                  "Windows 和 Linux 的换行符有什么不同？怎么转换？")
    convert = [i for i in result.synthesized_insights if i.dimension and "转换" in i.dimension]
    assert convert and "fromdos" in convert[0].citations[0].quote


def test_rows_of_a_table_quoted_are_not_taken_for_repeats_of_it():
    """Rows of one table share their columns' words ("systemctl"); each
    answers on its own, so a row further down the table quoted is no
    repeat of the rows quoted: "set-default" makes the console the default,
    "isolate" only switches to it now. With room for one quote past the
    lead, it is those rows, not a paragraph that only mentions 图形界面."""
    rows = ["| 列出所有 target 单元配置 | \"systemctl list-units --type=target\" |",
            "| 转换到 \"图形\" (图形界面系统) | \"systemctl isolate graphical\" |",
            "| 转换到 \"多用户\" (命令行系统) | \"systemctl isolate multi-user\" |",
            "| 向\"$unit\"发送杀死信号 | \"systemctl kill $unit\" |",
            "| 检查\"$unit\"服务是否是活动的 | \"systemctl is-active $unit\" |",
            "| 启用 \"$unit\" (增加符号链接) | \"systemctl enable $unit\" |",
            "| 设置默认 target 为\"graphical\" (图形系统) | \"systemctl set-default graphical\" |",
            "| 设置默认的 target 为\"multi-user\" (命令行系统) | \"systemctl set-default multi-user\" |"]
    table = ("3.2.6. systemctl\n\nsystemctl(1) 命令提供通用的系统管理操作。\n\n表 3.6. 典型的 systemctl 命令片段列表\n\n"
             "| 操作 | 命令片段 |\n| --- | --- |\n" + "\n".join(rows) + "\n")
    prose = "".join(f"1.2.{n}. {heading}\n\n{text}\n\n" for n, (heading, text) in enumerate([
        ("环境变量", "显示管理器可以给图形用户界面会话设定环境变量。"),
        ("终端", "图形界面的终端模拟器有很多种可以选择。"),
        ("挂载", "图形界面下自动挂载的设备，操作前需要手工卸载。"),
        ("网络", "通过图形界面配置网络更方便。")]))
    result = extractive_synthesis([source(1, "file:///doc/ch03.html", "第 3 章 系统初始化", table),
                                   source(2, "file:///doc/ch01.html", "第 1 章 教程", prose)],
                                  "想让机器开机直接进命令行，不进图形界面，怎么设置？", opts=ExtractiveOptions(max_insights=2))
    said = " ".join(quotes(result))
    assert "systemctl isolate multi-user" in said and "systemctl set-default multi-user" in said
    # the rows around it that share no word with the question stay out (链接 only shares 接 with 直接)
    assert "systemctl enable" not in said and "systemctl kill" not in said


def test_a_sentence_too_short_to_be_evidence_is_quoted_with_the_one_before_it():
    """"It has to be empty." answers the question, after the sentence that
    says why: too short to stand as evidence alone, it is quoted as part of
    its paragraph."""
    page = ("Moving the tank to the new flat\n\nNever lift or slide a tank that still has water or gravel in it: "
            "the weight twists the frame and can split the silicone seams. It has to be empty.\n\n"
            "What I did (moving day)\n\n1. No food the day before.\n\n2. Fish into lidded buckets filled with tank "
            "water, with a battery air pump in each.\n")
    quote, _ = quote_holding("file:///notes/moving-the-tank.html", "Moving the tank", page,
                             "Can I carry the tank with some water left in it?", "Never lift")
    assert quote.startswith("Never lift or slide a tank") and quote.endswith("It has to be empty.")


def test_a_part_only_touched_is_said_to_be_touched_not_unanswered():
    """A part whose passages only touch it is not said to be unanswered
    while they are quoted: the report says they touch it."""
    text = ("# Sourdough\n\nLet the dough rest for 30 to 45 minutes before shaping.\n\n"
            "# Shopping\n\nThe market stall sells rye flour in paper bags on Saturdays.\n")
    result = extractive_synthesis([source(1, "file:///notes/sourdough.md", "Sourdough", text)],
                                  "How long should the dough rest, and which flour gives the best crust?")
    gaps = [g.description for g in result.contradictions_or_gaps if g.kind == "gap"]
    assert gaps == ["The sources may not answer this part of the question: “which flour gives the best crust” — "
                    "passages touch on it, but none speaks to it clearly."]


def test_the_sentence_model_reads_passages_in_the_other_language_too():
    """A manual half translated: a Chinese question's answer may be an
    English paragraph, which no word of the question matches. The sentence
    model, the one signal that reads across languages, must read it even
    when more Chinese passages than its pool holds rank above it."""
    from dataclasses import replace

    from tasks.synthesis.parameters import PARAMETERS

    chinese = "\n\n".join(f"第 {n} 节介绍软件包的配置文件和常用命令，以及系统启动时读取的设置。" for n in range(12))
    english = ("APT reads its configuration from the files under /etc/apt/apt.conf.d/ in alphabetical order.\n\n"
               "To make the APT tools use an HTTP proxy, put a line such as Acquire::http::Proxy "
               "\"http://proxy:3128\" in a file under /etc/apt/apt.conf.d/.\n\n"
               "The sources.list file lists the mirrors APT downloads packages from.")
    sources = [source(1, "https://example.org/zh.html", "软件包配置", chinese, 0.9),
               source(2, "https://example.org/en.html", "Configuring APT", english, 0.3)]
    found = windows(candidates(sources))
    scores = score(read_question("公司上网要走代理，apt 下载软件包的代理在哪里设置？"), found,
                   replace(PARAMETERS, sentence_pool=3))
    read = {found[i].source.source_id for i in range(len(found)) if scores.closeness[i] > 0}
    assert "s2" in read
