"""The shared tokenizer, stopword list and stemmer."""

from tasks.common.text import STOPWORDS, is_cjk, keywords, phrases, stem, term_set, terms, tokens


def test_tokens_split_identifiers_and_fold_case_like_the_index():
    assert tokens("sys.path and __init__ in Python's IMPORT") == ["sys", "path", "and", "init", "in", "python",
                                                                   "s", "import"]


def test_terms_drop_stopwords_and_porter_stem_keeping_repeats():
    assert terms("How does the garbage collector handle reference cycles? Cycles!") == [
        "garbag", "collector", "refer", "cycl", "cycl"]
    assert stem("generators") == stem("generator") == "gener"
    assert "doe" not in term_set("What does it do?")  # "does" is a stopword, never the stem "doe"


def test_chinese_is_indexed_as_character_bigrams_without_question_words():
    assert is_cjk("大语言模型") and not is_cjk("large language model")
    found = terms("什么是大语言模型")
    assert "什么" not in found and found[-4:] == ["大语", "语言", "言模", "模型"]
    assert {"语言", "模型"} <= term_set("LLM 大语言模型在医疗中的应用") and "llm" in term_set("LLM")


def test_keywords_and_phrases_keep_surface_forms_for_planning():
    question = "How does Python's garbage collector handle reference cycles?"
    assert keywords(question) == ["Python", "garbage", "collector", "reference", "cycles"]
    assert phrases(question) == ["Python's garbage collector", "reference cycles"]
    assert {"how", "does", "work", "的"} <= STOPWORDS
