"""The gates: search completeness, filter sufficiency (with fallback rounds),
the output check, and new keywords for a fallback round."""

from __future__ import annotations

import copy

import pytest

from schemas.governance import Policy
from tasks.selection.gates import (build_output, filter_sufficiency, output_check, search_completeness, threshold,
                         unused_keywords)
from tasks.selection.filters import Candidate, aggregate_publishers

POLICY = Policy()  # x2.0 pass, x1.2 warn, 0.8 near ratio


def test_threshold_survives_float_rounding():
    assert threshold(10, 1.2) == 12 and threshold(10, 0.8) == 8 and threshold(3, 1.2) == 4


@pytest.mark.parametrize("count, outcome", [(20, "pass"), (35, "pass"), (19, "warn"), (12, "warn"), (11, "abort"), (0, "abort")])
def test_search_completeness(count, outcome):
    result = search_completeness(count, 10, POLICY)
    assert result.gate == "search_completeness" and result.outcome == outcome
    assert result.metrics["candidates"] == count


def test_search_completeness_reason_names_the_numbers_and_takes_a_list():
    result = search_completeness(["c"] * 5, 10, POLICY, deepest=50)
    assert result.outcome == "abort" and not result.proceeds
    assert "only 5 candidate sources, even asking each query for 50 results" in result.reason
    assert "selecting 10 needs at least 12" in result.reason
    # what to do, in words: fewer sources, other documents, more providers
    assert "--target 4" in result.reason and "--library" in result.reason and "--providers" in result.reason


def test_search_completeness_goes_on_when_the_providers_have_nothing_more():
    result = search_completeness(["c"] * 11, 10, POLICY, deepest=20, exhausted=True)
    assert result.outcome == "warn" and result.proceeds
    assert "only 11 candidate sources" in result.reason and "nothing more" in result.reason
    assert search_completeness([], 10, POLICY, deepest=20, exhausted=True).outcome == "abort"


@pytest.mark.parametrize("selected, rounds_used, max_rounds, outcome, words", [
    (10, 0, 1, "pass", "10 selected"),
    (12, 0, 1, "pass", "target 10"),
    (8, 0, 1, "warn", ">= 8"),
    (7, 0, 1, "fallback", "round 1 of 1"),
    (3, 1, 2, "fallback", "round 2 of 2"),
    (7, 1, 1, "warn", "accepting 7 after 1 fallback rounds"),
    (2, 0, 0, "warn", "accepting 2 after 0 fallback rounds"),
    (0, 1, 1, "abort", "no source survived"),
])
def test_filter_sufficiency(selected, rounds_used, max_rounds, outcome, words):
    result = filter_sufficiency(selected, 10, POLICY, rounds_used, max_rounds)
    assert result.gate == "filter_sufficiency" and result.outcome == outcome
    assert words in result.reason


# -- output check ----------------------------------------------------------------------

def good_output() -> dict:
    selected = [Candidate(f"s{i}", f"https://{host}/{i}", f"T{i}", score_final=0.5, quality=0.6)
                for i, host in enumerate(["a.org", "a.org", "b.org"], 1)]
    return build_output(10, selected, aggregate_publishers(selected))


def test_output_check_passes_a_built_output():
    output = good_output()
    assert (output["filtered_count"], output["publisher_count"], len(output["publisher_sources"])) == (3, 2, 3)
    assert output["selected"][0]["rank"] == 1
    assert output_check(output).outcome == "pass"


def broken(change) -> dict:
    output = copy.deepcopy(good_output())
    change(output)
    return output


@pytest.mark.parametrize("change, words", [
    (lambda o: o.update(candidate_count=2), "candidate_count 2 < filtered_count 3"),
    (lambda o: o.update(publisher_count=5), "publisher_count 5 != 2 publishers"),
    (lambda o: o["selected"].pop(), "filtered_count 3 != 2 selected"),
    (lambda o: o["publisher_sources"].append({"publisher": "a.org", "source_id": "s9"}), "'s9', which is not selected"),
    (lambda o: o["publisher_sources"].append({"publisher": "c.org", "source_id": "s1"}), "'c.org', which is not listed"),
    (lambda o: o["publisher_sources"].pop(), "selected source 's3' has no publisher"),
    (lambda o: o.pop("publishers"), "publishers is missing"),
    (lambda o: o.update(filtered_count="3"), "filtered_count is missing or not an integer"),
])
def test_output_check_aborts_on_the_first_broken_rule(change, words):
    result = output_check(broken(change))
    assert result.outcome == "abort" and words in result.reason


def test_output_check_refuses_a_non_object():
    assert output_check([]).outcome == "abort"


# -- fallback keywords --------------------------------------------------------------------

def test_unused_keywords_skip_what_ran_and_stay_on_topic():
    question = "garbage collector reference cycles"
    plan = ["garbage collector", "python gc module weakref"]
    used = ["garbage collector", "Garbage  Collector reference"]
    new = unused_keywords(plan, question, used, max_keywords=4)
    assert new[:4] == ["garbage cycles", "garbage python", "garbage gc", "garbage module"]
    assert len(new) == 4


def test_unused_keywords_combine_when_every_term_was_used():
    new = unused_keywords([], "alpha beta gamma", ["alpha", "beta", "gamma", "alpha beta"], max_keywords=6)
    assert new == ["alpha gamma", "beta gamma"]


def test_unused_keywords_cjk():
    new = unused_keywords(["医疗诊断 影像"], "大语言模型在医疗诊断中的应用", ["大语言模型", "医疗诊断"], max_keywords=3)
    # New terms first (joined to the topic), then pairs of the terms.
    assert new == ["大语言模型 应用", "大语言模型 影像", "大语言模型 医疗诊断"]
