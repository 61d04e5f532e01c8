"""The answer a reader reads first: the sentences that say what the question
asks, cited and verbatim, one point per part, nothing that does not speak
to the question, within a minute's reading (ANSWER_WORDS)."""

from __future__ import annotations

from schemas.report import ANSWER_WORDS
from tasks.common.text import reading_words
from tasks.synthesis.base import Source
from tasks.synthesis.extractive import extractive_synthesis

NOTES = {
    "cold-brew.md": "# Cold brew\n\nUse a coarse grind and a ratio of 1:8 coffee to water. Steep 16 to 18 hours "
                    "in the fridge, then strain through a paper filter. It keeps for a week in the fridge.\n",
    "aeropress.md": "# AeroPress\n\nI use 15 g of coffee and 230 g of water at 85 °C. Stir for ten seconds, "
                    "wait a minute and a half, then press slowly.\n",
    "cupping.md": "# Cupping\n\nA cupping session compares coffees side by side. Break the crust after four "
                  "minutes and slurp from the spoon.\n",
    "espresso.md": "# Espresso\n\nPull 18 g of coffee into 36 g of espresso in about 28 seconds. A shot that "
                   "runs fast needs a finer grind.\n",
    "pour-over.md": "# Pour-over\n\nBloom with twice the coffee's weight of water for 45 seconds, then pour in "
                    "slow circles. The whole brew takes about three minutes.\n",
}


def notes() -> list[Source]:
    return [Source(number=n, source_id=f"s{n}", url=f"file:///notes/{name}", title=name,
                   content_text=text, score=0.5) for n, (name, text) in enumerate(NOTES.items(), 1)]


def answer_text(result) -> str:
    return " ".join(point.text for point in result.answer)


def test_the_answer_opens_with_the_sentence_that_says_it_and_adds_nothing_off_the_question():
    result = extractive_synthesis(notes(), "How long should I steep cold brew coffee?")
    first = result.answer[0]
    assert first.text.startswith("Steep 16 to 18 hours in the fridge, then strain through a paper filter.")
    citation = first.citations[0]
    assert citation.verified and citation.url.endswith("cold-brew.md")
    assert NOTES["cold-brew.md"][citation.start:citation.end] == first.text  # verbatim, with offsets
    said = answer_text(result)
    for elsewhere in ("AeroPress", "230 g", "crust", "36 g", "Bloom"):
        assert elsewhere not in said, said
    assert result.synthesized_insights  # the passages stay below, as evidence


def test_each_part_of_a_question_gets_its_point():
    question = "How long should I steep cold brew, and how long does it keep?"
    result = extractive_synthesis(notes(), question)
    said = answer_text(result)
    assert "Steep 16 to 18 hours" in said and "It keeps for a week" in said
    labels = " ".join(point.dimension or "" for point in result.answer)
    assert "How long should I steep cold brew" in labels and "how long does it keep" in labels


def test_a_sentence_that_introduces_a_command_brings_it_along():
    page = ("Exiting the shell\n\nTo leave the shell and log out, type:\n\n$ exit\n\n"
            "Other shells\n\nZsh and fish are other shells you can install from the archive.\n")
    source = Source(number=1, source_id="s1", url="file:///doc/shell.html", title="Shell basics",
                    content_text=page)
    result = extractive_synthesis([source], "How do I leave the shell and log out?")
    assert result.answer[0].text == "To leave the shell and log out, type: $ exit"
    assert result.answer[0].citations[0].verified


def test_the_answer_stays_within_a_minutes_reading_however_much_the_sources_say():
    sentence = ("The garbage collector finds reference cycles among container objects of generation {n} "
                "and frees every object in them that no outside reference keeps alive, which takes a while "
                "on a large heap with many long-lived objects and deep structures of lists and dictionaries.")
    sources = [Source(number=n, source_id=f"s{n}", url=f"file:///notes/gc-{n}.md", title=f"GC {n}",
                      content_text=" ".join(sentence.format(n=f"{n}.{k}") for k in range(6)))
               for n in range(1, 12)]
    result = extractive_synthesis(sources, "How does the garbage collector find reference cycles?")
    assert result.answer
    assert reading_words(answer_text(result)) <= ANSWER_WORDS


def test_a_chinese_answer_is_the_sentence_and_its_command():
    page = ("1.1.8. 怎样关闭系统\n\n就像任何其他的现代操作系统一样，Debian 会通过内存中的缓存数据进行文件操作以提高性能，"
            "因此在电源被安全地关闭前需要适当的过程。\n\n在普通多用户模式下，可以使用命令行关闭系统。\n\n"
            "# shutdown -h now\n\n1.1.9. 恢复一个正常的控制台\n\n当屏幕发狂时，你可以在命令行输入“reset”。")
    source = Source(number=1, source_id="s1", url="file:///doc/ch01.zh-cn.html", title="第 1 章", content_text=page)
    result = extractive_synthesis([source], "用命令行怎么关机？")
    assert result.answer[0].text == "在普通多用户模式下，可以使用命令行关闭系统。 # shutdown -h now"
    assert "reset" not in answer_text(result)
