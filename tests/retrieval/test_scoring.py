"""Scoring: relevance, freshness, authority and their weighted sum."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from tasks.common.settings import Settings
from tasks.retrieval.providers.base import Hit
from tasks.retrieval.scoring import (
    FreshnessWindow,
    ScoringConfig,
    lexical_relevance,
    score_authority,
    score_final,
    score_freshness,
    score_hit,
    score_relevance,
)
from tasks.common.text import term_set as terms

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


# -- relevance ------------------------------------------------------------------

def test_the_providers_judgement_of_the_question_is_used_and_clamped():
    assert score_relevance("anything", Hit(url="https://a.org", title="x", question_score=0.42)) == 0.42
    assert score_relevance("q", Hit(url="https://a.org", title="x", question_score=1.7)) == 1.0
    assert score_relevance("q", Hit(url="https://a.org", title="x", question_score=-0.2)) == 0.0


def test_a_query_score_is_not_relevance_to_the_question(settings):
    """A one-word query's best hit scores high for that query; its relevance is
    still judged against the question, and the query's score stays beside it."""
    hit = Hit(url="https://a.org", title="Create a file", snippet="how to create files", provider_score=0.97)
    scores = score_hit("How does the garbage collector free reference cycles?", hit, "web", settings, now=NOW)
    assert scores["score_relevance"] == 0.0 and scores["score_provider"] == 0.97


def test_lexical_relevance_counts_query_terms_in_title_and_snippet():
    query = "context manager protocol"
    assert lexical_relevance(query, "Context managers and the protocol", None) == 1.0
    in_snippet_only = lexical_relevance(query, "Python notes", "a context manager follows a protocol")
    assert in_snippet_only == pytest.approx(0.75)
    partial = lexical_relevance(query, "Context", "nothing else")
    assert partial == pytest.approx(1 / 3)
    assert lexical_relevance(query, "Cooking pasta", "boil water") == 0.0


def test_lexical_relevance_folds_endings_and_ignores_stopwords():
    assert terms("The managers are running") == {"manag", "run"}  # Porter stems
    assert lexical_relevance("running the manager", "Managers run", None) == 1.0
    assert lexical_relevance("the of and", "anything", None) == 0.5  # no usable query terms: neutral


def test_chinese_relevance_uses_character_bigrams():
    query = "大语言模型 医疗应用"
    close = lexical_relevance(query, "大语言模型在医疗诊断中的应用", None)
    far = lexical_relevance(query, "明天的天气预报", "下雨")
    assert close > 0.8 and far == 0.0
    mixed = lexical_relevance("LLM 医疗", "LLM在医疗领域", None)
    assert mixed == 1.0


def test_relevance_without_provider_score_falls_back_to_content_text():
    hit = Hit(url="https://a.org", title="Page", content_text="all about tomato blight")
    assert score_relevance("tomato blight", hit) == pytest.approx(0.75)


# -- freshness ------------------------------------------------------------------

def test_news_and_web_windows_are_full_then_linear_then_zero():
    for intent in ("news", "web"):
        assert score_freshness(ago(10), intent, NOW) == 1.0
        assert score_freshness(ago(365), intent, NOW) == 1.0
        assert score_freshness(ago(365 + 365 / 2), intent, NOW) == pytest.approx(0.5)
        assert score_freshness(ago(730), intent, NOW) == 0.0
        assert score_freshness(ago(5000), intent, NOW) == 0.0


def test_academic_counts_from_2020():
    assert score_freshness(datetime(2020, 1, 1, tzinfo=timezone.utc), "academic", NOW) == 1.0
    assert score_freshness(datetime(2023, 6, 1, tzinfo=timezone.utc), "academic", NOW) == 1.0
    assert score_freshness(datetime(2019, 12, 31, tzinfo=timezone.utc), "academic", NOW) == 0.0


def test_undated_is_neutral_and_future_is_new_and_naive_is_utc():
    for intent in ("academic", "news", "web", "library"):
        assert score_freshness(None, intent, NOW) == 0.5
    assert score_freshness(NOW + timedelta(days=3), "news", NOW) == 1.0
    assert score_freshness(datetime(2026, 2, 1), "news", NOW) == 1.0


def test_library_window_is_long_and_unknown_intent_uses_web():
    assert score_freshness(ago(2 * 365), "library", NOW) == 1.0
    assert 0.0 < score_freshness(ago(6 * 365), "library", NOW) < 1.0
    assert score_freshness(ago(500), "unknown", NOW) == score_freshness(ago(500), "web", NOW)


def test_windows_are_configurable():
    windows = {"news": FreshnessWindow(7, 14), "academic": FreshnessWindow(since=date(2024, 1, 1))}
    config = ScoringConfig(windows=windows, undated=0.3)
    assert score_freshness(ago(10), "news", NOW, config) == pytest.approx(4 / 7)
    assert score_freshness(datetime(2023, 5, 1, tzinfo=timezone.utc), "academic", NOW, config) == 0.0
    assert score_freshness(None, "news", NOW, config) == 0.3


# -- authority ------------------------------------------------------------------

@pytest.mark.parametrize("url", [
    "https://arxiv.org/abs/2401.00001", "https://www.nature.com/articles/x", "https://doi.org/10.1/x",
    "https://dl.acm.org/doi/10.1145/1", "https://ieeexplore.ieee.org/document/1",
    "https://link.springer.com/article/1",
])
def test_scholarly_publishers_rank_highest(url):
    assert score_authority(url) == 0.9


@pytest.mark.parametrize("url", [
    "https://www.nasa.gov/x", "https://cs.stanford.edu/x", "https://www.ox.ac.uk/x", "https://www.u-tokyo.ac.jp/",
    "https://www.tsinghua.edu.cn/x", "https://www.gov.uk/x", "https://www.who.int/x",
])
def test_government_and_academic_domains(url):
    assert score_authority(url) == 0.85


def test_reference_default_low_ip_and_library():
    assert score_authority("https://en.wikipedia.org/wiki/BM25") == 0.8
    assert score_authority("https://docs.python.org/3.11/reference/compound_stmts.html#with") == 0.85
    assert score_authority("https://some-blog.example.com/post") == 0.4
    assert score_authority("https://medium.com/@someone/post") == 0.3
    assert score_authority("http://203.0.113.7/page") == 0.2
    assert score_authority("file:///home/me/notes/a.md") == 0.7
    # a lookalike is not the domain
    assert score_authority("https://notarxiv.org/x") == 0.4
    assert score_authority("https://arxiv.org.evil.com/x") == 0.4


def test_authority_is_configurable():
    config = ScoringConfig(domains={"example.com": 0.95}, library_authority=1.0, default_authority=0.1)
    assert score_authority("https://docs.example.com/a", config) == 0.95
    assert score_authority("file:///x.md", config) == 1.0
    assert score_authority("https://arxiv.org/abs/1", config) == 0.1  # the list replaces the default list


# -- final ------------------------------------------------------------------------

def test_final_is_the_normalized_weighted_sum(settings):
    assert score_final(1.0, 0.0, 0.5, settings) == pytest.approx(0.6 + 0.1)
    heavy = Settings(home=settings.home, weight_relevance=3, weight_freshness=1, weight_authority=0)
    assert score_final(0.8, 0.4, 1.0, heavy) == pytest.approx((3 * 0.8 + 0.4) / 4)
    zero = Settings(home=settings.home, weight_relevance=0, weight_freshness=0, weight_authority=0)
    assert score_final(0.3, 1.0, 1.0, zero) == 0.3


def test_score_hit_returns_the_four_scores_in_bounds(settings):
    hits = [
        Hit(url="https://arxiv.org/abs/1", title="BM25 ranking", snippet="ranking with bm25",
            published_at=datetime(2021, 1, 1, tzinfo=timezone.utc)),
        Hit(url="file:///notes/x.md", title="x", provider_score=0.9),
        Hit(url="http://10.0.0.1/", title="", snippet=None, published_at=datetime(1990, 1, 1)),
        Hit(url="https://example.com", title="大语言模型", provider_score=float("nan")),
    ]
    for intent in ("academic", "news", "web", "library"):
        for hit in hits:
            scores = score_hit("bm25 ranking 大语言模型", hit, intent, settings, now=NOW)
            assert {"score_relevance", "score_freshness", "score_authority", "score_final"} <= set(scores)
            assert set(scores) - {"score_relevance", "score_freshness", "score_authority", "score_final"} <= {
                "score_provider"}
            assert all(0.0 <= value <= 1.0 for value in scores.values()), (hit, scores)
    first = score_hit("bm25 ranking", hits[0], "academic", settings, now=NOW)
    assert first == {"score_relevance": 1.0, "score_freshness": 1.0, "score_authority": 0.9,
                     "score_final": pytest.approx(0.98)}


def test_scoring_file_changes_authority_and_windows(tmp_path):
    from tasks.retrieval.scoring import scoring_config
    path = tmp_path / "scoring.json"
    path.write_text('{"domains": {"example.org": 0.95}, "windows": {"news": {"full_days": 10, "zero_days": 20}}}')
    settings = Settings(scoring_file=path)
    now = datetime(2026, 1, 31, tzinfo=timezone.utc)
    hit = Hit(url="https://news.example.org/a", title="x", published_at=datetime(2026, 1, 16, tzinfo=timezone.utc))
    scores = score_hit("x", hit, "news", settings, now=now)
    assert scores["score_authority"] == 0.95
    assert scores["score_freshness"] == 0.5  # 15 days: halfway from 10 to 20
    assert scoring_config(Settings()).domains.get("example.org") is None


@pytest.mark.parametrize("content, words", [
    ("{not json", ["scoring file", "bad.json"]),
    ('{"domains": {"example.org": 1.5}}', ["domains.example.org", "less than or equal to 1"]),
    ('{"windows": {"news": {"full_days": -3}}}', ["windows.news.full_days"]),
    ('{"default_authoirty": 0.3}', ["default_authoirty", "not permitted"]),
])
def test_bad_scoring_file_is_one_clear_line(tmp_path, content, words):
    from tasks.retrieval.scoring import scoring_config
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError) as caught:
        scoring_config(Settings(scoring_file=path))
    assert "\n" not in str(caught.value)
    for word in words:
        assert word in str(caught.value)
