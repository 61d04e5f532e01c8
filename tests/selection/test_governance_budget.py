"""The run budget (docs/research.md, "Budget"): defaults, environment, overrides, and a
one-line error naming what to fix for every bad value."""

from __future__ import annotations

import pytest

from schemas.governance import Budget, BudgetError
from tasks.common.settings import Settings

ENV = {"PIPELINE_TIMEOUT": "600", "PIPELINE_MAX_TARGET_COUNT": "25", "PIPELINE_MAX_FALLBACK_ROUNDS": "3"}


def test_defaults_without_environment():
    assert Budget.resolve({}, environ={}) == Budget(timeout_seconds=1800, max_target_count=10, max_fallback_rounds=1)


def test_environment_sets_each_field():
    assert Budget.resolve({}, environ=ENV) == Budget(timeout_seconds=600, max_target_count=25, max_fallback_rounds=3)


def test_overrides_win_over_environment_and_none_means_unset():
    budget = Budget.resolve({"timeout_seconds": 45, "max_target_count": None, "max_fallback_rounds": "0"},
                            environ=ENV)
    assert budget == Budget(timeout_seconds=45, max_target_count=25, max_fallback_rounds=0)


def test_blank_environment_value_is_unset():
    assert Budget.resolve({}, environ={"PIPELINE_TIMEOUT": "  "}).timeout_seconds == 1800


def test_bounds_are_inclusive():
    low = Budget.resolve({}, environ={"PIPELINE_TIMEOUT": "30", "PIPELINE_MAX_TARGET_COUNT": "1",
                                      "PIPELINE_MAX_FALLBACK_ROUNDS": "0"})
    high = Budget.resolve({"max_target_count": 200, "max_fallback_rounds": 5}, environ={})
    assert (low.timeout_seconds, low.max_target_count, low.max_fallback_rounds) == (30, 1, 0)
    assert (high.max_target_count, high.max_fallback_rounds) == (200, 5)


@pytest.mark.parametrize("variable, value, words", [
    ("PIPELINE_TIMEOUT", "29", ["PIPELINE_TIMEOUT=29", "out of range", ">= 30"]),
    ("PIPELINE_TIMEOUT", "-5", ["PIPELINE_TIMEOUT=-5", ">= 30"]),
    ("PIPELINE_MAX_TARGET_COUNT", "0", ["PIPELINE_MAX_TARGET_COUNT=0", "from 1 to 200"]),
    ("PIPELINE_MAX_TARGET_COUNT", "201", ["PIPELINE_MAX_TARGET_COUNT=201", "from 1 to 200"]),
    ("PIPELINE_MAX_FALLBACK_ROUNDS", "6", ["PIPELINE_MAX_FALLBACK_ROUNDS=6", "from 0 to 5"]),
    ("PIPELINE_MAX_FALLBACK_ROUNDS", "-1", ["PIPELINE_MAX_FALLBACK_ROUNDS=-1", "from 0 to 5"]),
    ("PIPELINE_TIMEOUT", "1800.5", ["PIPELINE_TIMEOUT='1800.5'", "not an integer", ">= 30"]),
    ("PIPELINE_MAX_TARGET_COUNT", "ten", ["PIPELINE_MAX_TARGET_COUNT='ten'", "not an integer", "from 1 to 200"]),
    ("PIPELINE_MAX_FALLBACK_ROUNDS", "1e1", ["PIPELINE_MAX_FALLBACK_ROUNDS='1e1'", "not an integer"]),
])
def test_bad_environment_value_is_one_clear_line(variable, value, words):
    with pytest.raises(BudgetError) as caught:
        Budget.resolve({}, environ={variable: value})
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("overrides, words", [
    ({"timeout_seconds": 10}, ["--timeout=10", ">= 30"]),
    ({"max_target_count": 500}, ["--max-target-count=500", "from 1 to 200"]),
    ({"max_fallback_rounds": 9}, ["max_fallback_rounds=9", "from 0 to 5"]),
    ({"timeout_seconds": 60.0}, ["--timeout=60.0", "not an integer"]),
    ({"max_target_count": True}, ["--max-target-count=True", "not an integer"]),
])
def test_bad_override_names_the_option(overrides, words):
    names = {"timeout_seconds": "--timeout", "max_target_count": "--max-target-count"}
    with pytest.raises(BudgetError) as caught:
        Budget.resolve(overrides, environ={}, option_names=names)
    assert "\n" not in str(caught.value)
    for word in words:
        assert word in str(caught.value)


def test_override_wins_even_when_environment_is_bad():
    assert Budget.resolve({"timeout_seconds": 60}, environ={"PIPELINE_TIMEOUT": "soon"}).timeout_seconds == 60


def test_unknown_override_is_refused():
    with pytest.raises(BudgetError, match="unknown budget option 'timeout'"):
        Budget.resolve({"timeout": 60}, environ={})


def test_the_settings_object_reads_the_environment(monkeypatch):
    monkeypatch.setenv("PIPELINE_MAX_TARGET_COUNT", "7")
    assert Settings().budget().max_target_count == 7
    monkeypatch.setenv("PIPELINE_TIMEOUT", "soon")
    Settings()  # a bad budget variable fails the run that resolves it, not every command
    with pytest.raises(BudgetError, match="PIPELINE_TIMEOUT='soon'"):
        Settings().budget()


def test_direct_construction_validates_and_caps_target():
    with pytest.raises(BudgetError):
        Budget(timeout_seconds=5)
    assert Budget(max_target_count=10).cap_target(50) == 10
    assert Budget(max_target_count=10).cap_target(4) == 4
