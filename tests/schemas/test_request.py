"""The research request every way of starting a run builds: a bad value is
one line naming it as the user gave it; the flow's parameters carry it whole."""

from __future__ import annotations

import pytest

from schemas.request import MAX_QUESTION, BudgetRequest, RequestError, ResearchRequest


@pytest.mark.parametrize("values, labels, message", [
    ({"question": "  "}, None, "the question is empty"),
    ({"question": "q" * (MAX_QUESTION + 1)}, None, f"the question has {MAX_QUESTION + 1} characters, more than 2000"),
    ({"question": "q", "target": 0}, {"target": "--target"}, "--target must be at least 1, not 0"),
    ({"question": "q", "target": 0}, {"target": "row 4: target"}, "row 4: target must be at least 1, not 0"),
    ({"question": "q", "max_results": 99}, None, "max_results must be between 1 and 50, not 99"),
    ({"question": "q", "demand_id": " "}, None, "demand_id is empty"),
    ({"question": "q", "task_id": "../etc"}, {"task_id": "--task-id"}, "--task-id must be 1-128 letters"),
    ({"question": "q", "providers": "library"}, None, "providers: "),
    ({"question": "q", "colour": "red"}, None, "colour: Extra inputs are not permitted"),
], ids=["empty", "too-long", "target", "target-of-a-row", "max-results", "demand", "task-id", "providers",
        "unknown-field"])
def test_a_bad_value_is_one_line_naming_it(values, labels, message):
    with pytest.raises(RequestError) as raised:
        ResearchRequest.build(labels, **values)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_the_budget_has_one_name_and_reads_the_older_one():
    assert BudgetRequest(timeout=60) == BudgetRequest(timeout_seconds=60)
    assert BudgetRequest.model_validate_json('{"timeout": 60}').timeout_seconds == 60


def test_the_flow_parameters_carry_the_request_whole():
    request = ResearchRequest(question="q", task_id="t1", library="/docs", providers=["library"], target=3,
                              budget=BudgetRequest(timeout_seconds=60))
    parameters = request.flow_parameters()
    assert parameters == {"question": "q", "task_id": "t1", "library": "/docs", "providers": ["library"],
                          "max_results": None, "target": 3, "demand_id": "default", "budget": {"timeout_seconds": 60}}
    assert ResearchRequest(**parameters) == request
    assert ResearchRequest(question="q").flow_parameters()["budget"] is None  # the run resolves every field
