"""Routing a plan to providers: no part of the plan is dropped, and every
search gets a unique query id that sorts in plan order (q2 before q10)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from schemas.plan import PlannedQuery, ResearchPlan, SearchSummary
from tasks.lake.landing import natural_sort_key
from tasks.retrieval.planning import keyword_plan
from tasks.retrieval.providers.registry import PROVIDER_NAMES, provider_class
from tasks.retrieval.search import route


def plan_of(*queries: tuple[str, str]) -> ResearchPlan:
    return ResearchPlan(question="q", planner="keywords", search_summary=SearchSummary(interpreted_topic="q"),
                        queries=[PlannedQuery(intent=intent, text=text) for intent, text in queries])


def providers(*names: str) -> dict:
    return {name: provider_class(name) for name in names}


def calls_by_plan_index(calls) -> dict[int, list[str]]:
    found = defaultdict(list)
    for call in calls:
        index = int(call.query.query_id[1:].split(".")[0])
        found[index].append(call.provider)
    return dict(found)


EVERY_INTENT = plan_of(("academic", "perovskite efficiency"), ("news", "solar record 2025"),
                       ("web", "home battery cost"), ("library", "solar notes"))


def test_library_alone_answers_every_intent():
    calls = route(EVERY_INTENT, providers("library"))
    assert [(c.provider, c.query.query_id, c.query.intent, c.query.text) for c in calls] == [
        ("library", "q1.library", "academic", "perovskite efficiency"),
        ("library", "q2.library", "news", "solar record 2025"),
        ("library", "q3.library", "web", "home battery cost"),
        ("library", "q4.library", "library", "solar notes"),
    ]


def test_academic_query_with_only_tavily_goes_to_tavily():
    assert "academic" not in provider_class("tavily").intents
    calls = route(plan_of(("academic", "perovskite efficiency")), providers("tavily"))
    assert [(c.provider, c.query.query_id, c.query.intent) for c in calls] == [("tavily", "q1.tavily", "academic")]


def test_library_intent_without_the_library_goes_to_every_enabled_provider():
    calls = route(plan_of(("library", "my notes on solar")), providers("tavily", "arxiv"))
    assert sorted(c.provider for c in calls) == ["arxiv", "tavily"]


def test_queries_go_to_the_providers_that_serve_their_intent():
    calls = route(EVERY_INTENT, providers("library", "tavily", "arxiv", "thenewsapi"))
    assert calls_by_plan_index(calls) == {
        1: ["arxiv"],                  # academic
        2: ["tavily", "thenewsapi"],   # news
        3: ["tavily"],                 # web
        4: ["library"],                # library: "… survey" or "… 2026" mean nothing to a folder
    }


def test_every_query_carries_the_research_question():
    calls = route(EVERY_INTENT, providers("library", "tavily"))
    assert {c.query.question for c in calls} == {"q"}


def normal(text: str) -> str:
    return " ".join(text.lower().split())


@pytest.mark.parametrize("names", [
    ("library",), ("tavily",), ("arxiv",), ("thenewsapi",), ("openalex", "semanticscholar"),
    ("brave", "searxng"), PROVIDER_NAMES,
])
def test_no_part_of_the_plan_is_dropped(names):
    """Every planned query's text reaches every provider serving its intent
    (every enabled provider when none serves it); a call never carries a
    text or intent the plan did not ask for."""
    plan = keyword_plan("How efficient are solar panels and battery storage?", 3)
    enabled = providers(*names)
    calls = route(plan, enabled)
    asked = {(c.provider, normal(c.query.text)) for c in calls}
    for planned in plan.queries:
        serving = [n for n, p in enabled.items() if planned.intent in p.intents] or list(enabled)
        for name in serving:
            assert (name, normal(planned.text)) in asked, (name, planned)
    for call in calls:
        index = int(call.query.query_id[1:].split(".")[0])
        planned = plan.queries[index - 1]
        assert (call.query.text, call.query.intent) == (planned.text, planned.intent)
        assert call.provider in names


def test_query_ids_are_unique_and_sort_naturally_in_plan_order():
    # 12 planned queries: q10..q12 must sort after q2, as the cursor reads them
    plan = keyword_plan("How efficient are solar panels and battery storage?", 3)
    assert len(plan.queries) >= 10
    calls = route(plan, providers("library", "tavily", "brave", "arxiv"))
    ids = [c.query.query_id for c in calls]
    assert len(ids) == len(set(ids))
    plan_order = [int(i[1:].split(".")[0]) for i in ids]
    assert plan_order == sorted(plan_order)  # routing order is plan order
    assert [i.split(".")[0] for i in sorted(ids, key=natural_sort_key)] == [i.split(".")[0] for i in ids]
    assert max(plan_order) >= 10
    assert sorted(ids) != sorted(ids, key=natural_sort_key)  # a plain string sort would put q10 before q2
    for call in calls:
        assert call.query.query_id == f"{call.query.query_id.split('.')[0]}.{call.provider}"


def test_query_ids_stay_the_same_when_the_plan_is_routed_again():
    """A resumed run routes its stored plan again and skips the ids that landed:
    the same plan and providers must give the same ids."""
    plan = keyword_plan("How efficient are solar panels and battery storage?", 3)
    first = [(c.provider, c.query) for c in route(plan, providers("library", "tavily"))]
    again = [(c.provider, c.query) for c in route(plan.model_copy(deep=True), providers("library", "tavily"))]
    assert first == again


def test_an_empty_plan_routes_nothing_and_no_provider_routes_nothing():
    assert route(plan_of(), providers("library")) == []
    assert route(EVERY_INTENT, {}) == []


def test_a_repeated_text_is_asked_once_unless_the_provider_reads_the_intent():
    plan = plan_of(("web", "solar record"), ("news", "solar record"), ("library", "Solar  record"),
                   ("academic", "solar record"))
    calls = route(plan, providers("library", "tavily"))
    asked = sorted((c.provider, c.query.intent) for c in calls)
    # nobody serves academic: it goes to both; the library ignores intents: one search;
    # tavily asks news differently from web: three
    assert asked == [("library", "library"), ("tavily", "academic"), ("tavily", "news"), ("tavily", "web")]
