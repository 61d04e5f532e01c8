"""Planning: a question becomes a ResearchPlan, by an LLM when one is
configured (THOUGHT/JSON answer, repaired) and otherwise by question
decomposition and keyword expansion. An unusable LLM answer falls back to
the keyword planner, and the plan says why."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

import httpx

from schemas.plan import PlannedQuery, ResearchPlan, SearchSummary
from tasks.common.llm import (FORMAT_INSTRUCTIONS, PLAN, AnswerShape, LLMConfig, LLMError, capped_list, capped_str,
                              chat)
from tasks.common.text import is_cjk, keywords, phrases, term_set
from schemas.errors import UserError

INTENT_KEYS = {"academic": "academic_queries", "news": "news_queries",
               "web": "web_queries", "library": "library_queries"}
MAX_DIMENSIONS = 6


@dataclass
class PlanOutcome:
    plan: ResearchPlan
    raw_answer: str | None = None  # the LLM's answer as received, kept for debugging


class EmptyQuestion(UserError, ValueError):
    """The question is empty."""


class SummaryAnswer(AnswerShape):
    interpreted_topic: capped_str(200)
    key_dimensions: capped_list(capped_str(100), 6)


QUERIES = capped_list(capped_str(120), 20)  # 20: the most max_queries_per_intent allows


# The planner's JSON, as planner_messages asks for it
class PlanAnswer(AnswerShape):
    search_summary: SummaryAnswer
    academic_queries: QUERIES
    news_queries: QUERIES
    web_queries: QUERIES
    library_queries: QUERIES


def plan_question(question: str, *, max_per_intent: int, llm: LLMConfig | None = None,
                  client: httpx.Client | None = None, intents: Iterable[str] | None = None) -> PlanOutcome:
    """`intents`: those the run's providers serve (default: all); the keyword
    planner writes queries for these only."""
    question = " ".join(question.split())
    if not question:
        raise EmptyQuestion("the question is empty")
    if llm is None:
        return PlanOutcome(keyword_plan(question, max_per_intent, intents=intents))
    try:
        answer = chat(llm, planner_messages(question, max_per_intent), kind=PLAN, shape=PlanAnswer, client=client)
    except LLMError as exc:
        return PlanOutcome(keyword_plan(question, max_per_intent, intents=intents, fallback_reason=str(exc)))
    try:
        plan = answer.read(lambda doc: plan_from_document(question, doc, max_per_intent))
    except (LLMError, ValueError) as exc:
        reason = f"the planner's answer was unusable: {str(exc).splitlines()[0]}"
        return PlanOutcome(keyword_plan(question, max_per_intent, intents=intents, fallback_reason=reason),
                           answer.content)
    return PlanOutcome(plan, answer.content)


def planner_messages(question: str, max_per_intent: int) -> list[dict]:
    language = "Chinese" if is_cjk(question) else "the question's language"
    system = (
        "You plan literature and web searches for a research question. "
        f"{FORMAT_INSTRUCTIONS} The JSON object has the keys: "
        '"search_summary": {"interpreted_topic": str, "key_dimensions": [str]}, '
        '"academic_queries": [str], "news_queries": [str], "web_queries": [str], "library_queries": [str]. '
        f"At most {max_per_intent} queries per list; short keyword queries a search engine understands; "
        f"write summary and dimensions in {language}. Today is {date.today().isoformat()}."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def plan_from_document(question: str, doc: dict, max_per_intent: int) -> ResearchPlan:
    summary = doc.get("search_summary") or {}
    if not isinstance(summary, dict) or not summary.get("interpreted_topic"):
        raise LLMError("search_summary.interpreted_topic is missing")
    queries = []
    for intent, key in INTENT_KEYS.items():
        texts = [t for t in (doc.get(key) or []) if isinstance(t, str) and t.strip()]
        queries += [PlannedQuery(intent=intent, text=t) for t in _unique(texts)[:max_per_intent]]
    if not queries:
        raise LLMError("the plan has no queries")
    if not about_the_question(question, [q.text for q in queries]):
        raise LLMError("none of the plan's queries shares a word with the question")
    dimensions = [str(d) for d in summary.get("key_dimensions") or [] if str(d).strip()]
    return ResearchPlan(question=question, planner="llm", queries=queries,
                        search_summary=SearchSummary(interpreted_topic=str(summary["interpreted_topic"]),
                                                     key_dimensions=dimensions))


def about_the_question(question: str, queries: list[str]) -> bool:
    """Whether a model's queries, taken together, share a content word with
    the question: a plan that does not (a small model's "true", "false")
    would search for nothing the asker wants. A question in a script none
    of the queries is written in is not judged (the model may translate)."""
    if is_cjk(question) and not any(map(is_cjk, queries)):
        return True
    if not is_cjk(question) and all(map(is_cjk, queries)):
        return True
    asked = words(question)
    return not asked or any(words(q) & asked for q in queries)


def words(text: str) -> set[str]:
    """A text's content terms that name something: a number alone does not
    (a plan of "120", "120", … for a question about a 120-litre tank)."""
    return {term for term in term_set(text) if not term.isdigit()}


def keyword_plan(question: str, max_per_intent: int, *, intents: Iterable[str] | None = None,
                 fallback_reason: str | None = None) -> ResearchPlan:
    """Decompose the question into its phrases (the dimensions). The library
    and the web get the question itself, then its key phrases (runs of two or
    more content words: a lone word such as "create" finds everything); the
    library does its own expansion (pseudo-relevance feedback), so nothing is
    added for it. Academic and news engines get the keywords with the words
    those engines rank by ("survey", the year)."""
    words = keywords(question)
    found = _unique(phrases(question))
    dimensions = found[:MAX_DIMENSIONS] or [" ".join(words[:5]) or question]
    key_phrases = [p for p in found if len(p.split()) >= 2 or is_cjk(p)]
    core = " ".join(words[:8]) or question
    study, survey, latest = ("研究", "综述", "最新") if is_cjk(question) else ("study", "survey", "latest")
    year = date.today().year
    candidates = {
        "library": [question] + key_phrases,
        "web": [question] + key_phrases,
        "academic": [core] + [f"{p} {study}" for p in key_phrases] + [f"{core} {survey}"],
        "news": [f"{core} {year}", f"{core} {latest}"] + key_phrases,
    }
    served = set(INTENT_KEYS) if intents is None else set(intents)
    queries = [PlannedQuery(intent=intent, text=text)
               for intent, texts in candidates.items() if intent in served
               for text in _unique(texts)[:max_per_intent]]
    return ResearchPlan(question=question, planner="keywords", fallback_reason=fallback_reason, queries=queries,
                        search_summary=SearchSummary(interpreted_topic=core, key_dimensions=dimensions))


def _unique(texts: list[str]) -> list[str]:
    seen, kept = set(), []
    for text in texts:
        key = " ".join(text.lower().split())
        if key and key not in seen:
            seen.add(key)
            kept.append(text)
    return kept
