"""Planning as a user relies on it: a question always becomes a plan that
covers every intent; an LLM planner (a local OpenAI-compatible chat server,
replayed here with httpx.MockTransport) is used when it answers something
usable, and otherwise the keyword planner takes over and says why."""

from __future__ import annotations

from datetime import date

import json

import httpx
import pytest

from tasks.common.llm import JSON_MARK, THOUGHT_MARK, LLMConfig
from tasks.retrieval.planning import INTENT_KEYS, EmptyQuestion, keyword_plan, plan_question
from tasks.common.text import is_cjk

INTENTS = set(INTENT_KEYS)
QUESTION = "How efficient are solar panels and battery storage?"
LOCAL_LLM = LLMConfig(base_url="http://127.0.0.1:11434/v1", model="qwen2.5:7b")


def completion(content: str) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "qwen2.5:7b",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 210, "completion_tokens": 90, "total_tokens": 300}}


class ChatServer:
    """A local chat-completions endpoint at the network edge: every request is
    recorded; the answer is a chat completion with `content`, or `status`."""

    def __init__(self, content: str = "", status: int = 200, error: Exception | None = None):
        self.content, self.status, self.error = content, status, error
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"message": "model overloaded"}})
        return httpx.Response(200, json=completion(self.content))

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    def body(self, index: int = 0) -> dict:
        return json.loads(self.requests[index].content)


def plan_with(server: ChatServer, question: str = QUESTION, max_per_intent: int = 3):
    with server.client() as client:
        return plan_question(question, max_per_intent=max_per_intent, llm=LOCAL_LLM, client=client)


def by_intent(plan) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for query in plan.queries:
        found.setdefault(query.intent, []).append(query.text)
    return found


# -- the keyword planner ----------------------------------------------------------

def test_keyword_planner_covers_all_four_intents():
    outcome = plan_question(QUESTION, max_per_intent=3)
    plan = outcome.plan
    assert plan.planner == "keywords" and plan.fallback_reason is None
    assert outcome.raw_answer is None
    assert set(by_intent(plan)) == INTENTS
    assert plan.question == QUESTION
    assert plan.search_summary.interpreted_topic
    dimensions = plan.search_summary.key_dimensions
    assert len(dimensions) >= 2
    asked = QUESTION.lower()
    assert all(word in asked for d in dimensions for word in d.lower().split())  # taken from the question
    assert any("battery storage" in d for d in dimensions)


@pytest.mark.parametrize("cap", [1, 2, 3, 5])
def test_keyword_planner_caps_queries_per_intent(cap):
    question = "What are the trade-offs of DuckDB vs Polars for lakehouse analytics, and how do they scale?"
    plan = keyword_plan(question, cap)
    queries = by_intent(plan)
    assert set(queries) == INTENTS
    for intent, texts in queries.items():
        assert 1 <= len(texts) <= cap, (intent, texts)
        # no query twice within an intent (case and spacing ignored)
        assert len({" ".join(t.lower().split()) for t in texts}) == len(texts)
    if cap == 1:
        assert len(plan.queries) == 4


def test_library_gets_the_question_and_key_phrases_without_padding_or_lone_words():
    question = "How does Python's garbage collector handle reference cycles?"
    plan = plan_question(question, max_per_intent=5, intents={"library"}).plan
    assert {q.intent for q in plan.queries} == {"library"}
    assert [q.text for q in plan.queries] == [question, "Python's garbage collector", "reference cycles"]
    asked = " ".join(q.text for q in plan.queries)
    assert not any(word in asked for word in ("study", "survey", "latest", str(date.today().year)))


def test_keyword_planner_squeezes_whitespace_of_the_question():
    plan = plan_question("  solar   panels\n and  batteries ", max_per_intent=2).plan
    assert plan.question == "solar panels and batteries"


def test_chinese_question_gets_chinese_dimensions_and_queries():
    question = "太阳能电池板的效率和储能电池的成本对比"
    plan = plan_question(question, max_per_intent=3).plan
    dimensions = plan.search_summary.key_dimensions
    assert len(dimensions) >= 2
    assert all(is_cjk(d) for d in dimensions)
    assert all(part in question for d in dimensions for part in d.split())  # taken from the question
    assert any("储能电池" in d for d in dimensions) and any("太阳能电池板" in d for d in dimensions)
    assert is_cjk(plan.search_summary.interpreted_topic)
    queries = by_intent(plan)
    assert set(queries) == INTENTS
    assert all(is_cjk(text) for text in sum(queries.values(), []))
    # the expansion words are Chinese too, not "study"/"latest"
    assert any(text.endswith("研究") for text in queries["academic"])
    assert any(text.endswith("最新") for text in queries["news"])
    assert not any(word in text for text in sum(queries.values(), []) for word in ("study", "survey", "latest"))


# -- the LLM planner --------------------------------------------------------------

LLM_DOC = {
    "search_summary": {"interpreted_topic": "photovoltaic efficiency and home batteries",
                       "key_dimensions": ["panel efficiency", "battery storage cost", "grid integration"]},
    "academic_queries": ["perovskite solar cell efficiency", "lithium battery degradation", "PV efficiency review",
                         "one too many academic query"],
    "news_queries": ["solar panel efficiency record 2025"],
    "web_queries": ["home battery storage cost", "Home  battery storage cost"],  # a repeat, differently spaced
    "library_queries": ["solar efficiency"],
}


def test_well_formed_llm_answer_becomes_the_plan():
    content = f"{THOUGHT_MARK}\nThe user asks about PV panels and batteries.\n{JSON_MARK}\n{json.dumps(LLM_DOC)}"
    server = ChatServer(content)
    outcome = plan_with(server)
    plan = outcome.plan
    assert plan.planner == "llm" and plan.fallback_reason is None
    assert outcome.raw_answer == content
    assert plan.search_summary.interpreted_topic == "photovoltaic efficiency and home batteries"
    assert plan.search_summary.key_dimensions == LLM_DOC["search_summary"]["key_dimensions"]
    queries = by_intent(plan)
    assert queries == {
        "academic": LLM_DOC["academic_queries"][:3],  # capped at max_per_intent
        "news": ["solar panel efficiency record 2025"],
        "web": ["home battery storage cost"],  # the repeat is dropped
        "library": ["solar efficiency"],
    }
    # one request, to the OpenAI-compatible endpoint, with the question and the format
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.method == "POST" and str(request.url) == "http://127.0.0.1:11434/v1/chat/completions"
    body = server.body()
    assert body["model"] == "qwen2.5:7b"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == QUESTION
    assert JSON_MARK in body["messages"][0]["content"] and "at most 3" in body["messages"][0]["content"].lower()


def test_messy_llm_answer_is_repaired():
    content = (
        "Sure! Let me think about this first.\n"
        f"{THOUGHT_MARK}\nPanels, batteries, and the grid.\n"
        f"{JSON_MARK}\n"
        "Here is the plan you asked for:\n"
        "```json\n"
        "{\n"
        "  // what the question is about\n"
        '  "search_summary": {"interpreted_topic": "solar and storage", '
        '"key_dimensions": ["efficiency", "cost",],},\n'
        '  "academic_queries": ["solar cell efficiency",], // peer-reviewed\n'
        '  "news_queries": [],\n'
        '  "web_queries": ["battery storage cost", "solar panel efficiency",],\n'
        "}\n"
        "```\n"
        "I hope this helps! Let me know if you need more queries."
    )
    outcome = plan_with(ChatServer(content))
    plan = outcome.plan
    assert plan.planner == "llm", plan.fallback_reason
    assert plan.search_summary.interpreted_topic == "solar and storage"
    assert plan.search_summary.key_dimensions == ["efficiency", "cost"]
    assert by_intent(plan) == {"academic": ["solar cell efficiency"],
                               "web": ["battery storage cost", "solar panel efficiency"]}
    assert outcome.raw_answer == content


def test_a_plan_whose_queries_share_no_word_with_the_question_is_unusable():
    # what a 270M model wrote under a JSON schema: the right shape, nothing the asker wants
    nonsense = {"search_summary": {"interpreted_topic": "true", "key_dimensions": ["true", "false"]},
                **{key: ["true", "false"] for key in ("academic_queries", "news_queries", "web_queries",
                                                      "library_queries")}}
    plan = plan_with(ChatServer(json.dumps(nonsense))).plan
    assert plan.planner == "keywords"
    numbers = {"search_summary": {"interpreted_topic": "120", "key_dimensions": ["120"]},
               "library_queries": ["120", "120 2025"]}  # the question's number, and nothing it names
    assert plan_with(ChatServer(json.dumps(numbers)), question=QUESTION + " For a 120 m2 roof?").plan.planner \
        == "keywords"
    assert plan.fallback_reason == ("the planner's answer was unusable: none of the plan's queries shares a word "
                                    "with the question")
    assert any("solar" in q.text or "battery" in q.text for q in plan.queries)


def test_a_plan_in_another_language_than_the_question_is_not_judged_by_its_words():
    translated = {"search_summary": {"interpreted_topic": "光伏效率", "key_dimensions": ["光伏效率"]},
                  "library_queries": ["光伏 效率", "储能 电池 成本"]}
    plan = plan_with(ChatServer(json.dumps(translated))).plan
    assert plan.planner == "llm" and [q.text for q in plan.queries] == ["光伏 效率", "储能 电池 成本"]


def test_answer_without_marks_but_with_a_json_object_is_used():
    outcome = plan_with(ChatServer("Plan: " + json.dumps(LLM_DOC) + " -- done"))
    assert outcome.plan.planner == "llm"


@pytest.mark.parametrize("content, why", [
    ("I am sorry, I cannot help with planning searches today.", "no JSON object"),
    (f"{THOUGHT_MARK}\nhmm\n{JSON_MARK}\n" + json.dumps({"academic_queries": ["x"]}), "interpreted_topic"),
    (f"{THOUGHT_MARK}\nhmm\n{JSON_MARK}\n" + json.dumps({"search_summary": {"interpreted_topic": "t"},
                                                         "web_queries": []}), "no queries"),
])
def test_unusable_llm_answer_falls_back_to_keywords_and_keeps_the_answer(content, why):
    outcome = plan_with(ChatServer(content))
    plan = outcome.plan
    assert plan.planner == "keywords"
    assert plan.fallback_reason and "unusable" in plan.fallback_reason and why in plan.fallback_reason
    assert "\n" not in plan.fallback_reason
    assert outcome.raw_answer == content  # kept for debugging
    # the fallback is the full keyword plan, not a partial one
    assert plan.queries == keyword_plan(QUESTION, 3).queries
    assert set(by_intent(plan)) == INTENTS


def test_http_500_falls_back_to_keywords():
    server = ChatServer(status=500)
    outcome = plan_with(server)
    plan = outcome.plan
    assert len(server.requests) == 1
    assert plan.planner == "keywords"
    assert "HTTP 500" in plan.fallback_reason and "model overloaded" in plan.fallback_reason
    assert outcome.raw_answer is None
    assert set(by_intent(plan)) == INTENTS


def test_unreachable_model_falls_back_to_keywords():
    outcome = plan_with(ChatServer(error=httpx.ConnectError("connection refused")))
    assert outcome.plan.planner == "keywords"
    assert "cannot reach the model" in outcome.plan.fallback_reason


def test_api_key_is_sent_but_never_in_the_fallback_reason():
    server = ChatServer(status=401)
    config = LLMConfig(base_url="http://127.0.0.1:8000/v1", model="m", api_key="sk-secret-123")
    with server.client() as client:
        outcome = plan_question(QUESTION, max_per_intent=2, llm=config, client=client)
    assert server.requests[0].headers["Authorization"] == "Bearer sk-secret-123"
    assert outcome.plan.planner == "keywords"
    assert "sk-secret-123" not in outcome.plan.fallback_reason


@pytest.mark.parametrize("question", ["", "   ", "\n\t "])
def test_empty_question_is_refused_before_any_request(question):
    server = ChatServer("unused")
    with pytest.raises(EmptyQuestion):
        plan_with(server, question=question)
    with pytest.raises(EmptyQuestion):
        plan_question(question, max_per_intent=3)
    assert server.requests == []
