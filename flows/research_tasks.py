"""The Prefect tasks of a research run. Each opens the catalog only for the
moment it needs it, so analysts' SQL is never locked out for long."""

from __future__ import annotations

import threading
import time

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import bundles_landed_event, report_artifact
from flows.common import retry_when_busy
from schemas.governance import Policy
from schemas.plan import PlannedQuery, ResearchPlan
from tasks.lake.catalog import open_catalog
from tasks.common.settings import Settings
from tasks.lake.consolidation import ConsolidationReport, consolidate
from tasks.lake.arrivals import land_as_it_arrives
from tasks.common.llm import LLMConfig
from tasks.retrieval.planning import PlanOutcome, plan_question
from tasks.selection.policy import load_policy
from tasks.retrieval.providers.registry import build_provider, enabled_names, provider_class
from tasks.selection.filters import StageOutput, coarse_filter, hard_filter, load_candidates
from tasks.selection.quality import page_fetcher, quality_filter
from tasks.reporting.report import publish_report, render_markdown
from tasks.retrieval.plan_store import (QuestionMismatch, landed_query_ids, log_skipped_files, store_plan,
                                  stored_plan)
from tasks.retrieval.search import SearchCall, search_bundle

BUSY = {"cache_policy": NO_CACHE, "retries": 2, "retry_delay_seconds": 5, "retry_condition_fn": retry_when_busy}

_limits: dict[str, threading.Semaphore] = {}
_limits_guard = threading.Lock()


def provider_slot(name: str, settings: Settings) -> threading.Semaphore:
    """At most settings.provider_concurrency calls in flight per provider
    (fewer when a provider's terms ask for it)."""
    limit = min(settings.provider_concurrency, provider_class(name).max_concurrency)
    with _limits_guard:
        return _limits.setdefault(f"{name}/{limit}", threading.Semaphore(limit))


@task(name="load-policy", **BUSY)
def policy_task(demand_id: str, settings: Settings) -> tuple[Policy, str]:
    with open_catalog(settings, "research: policy") as catalog:
        return load_policy(catalog, demand_id)


@task(name="plan", **BUSY)
def plan_task(question: str, task_id: str, run_id: str, settings: Settings, llm: LLMConfig | None) -> ResearchPlan:
    """The task's stored plan when it is resumed, else a new one (by `llm`,
    the run's model, when there is one)."""
    with open_catalog(settings, "research: plan") as catalog:
        previous = stored_plan(catalog, task_id)
    if previous is not None:
        if previous.question != " ".join(question.split()):
            raise QuestionMismatch(f"task {task_id!r} already holds research on another question: "
                                   f"{previous.question!r}")
        return previous
    intents = {intent for name in enabled_names(settings) for intent in provider_class(name).intents}
    outcome = plan_question(question, max_per_intent=settings.max_queries_per_intent, llm=llm, intents=intents)
    save_plan(task_id, run_id, outcome, settings)
    if outcome.plan.fallback_reason:
        get_run_logger().warning("planner fell back to keywords: %s", outcome.plan.fallback_reason)
    return outcome.plan


def save_plan(task_id: str, run_id: str, outcome: PlanOutcome, settings: Settings) -> None:
    with open_catalog(settings, "research: plan") as catalog:
        store_plan(catalog, task_id, run_id, outcome)


@task(name="extend-plan", **BUSY)
def extend_plan_task(plan: ResearchPlan, texts: list[str], task_id: str, run_id: str,
                     settings: Settings) -> ResearchPlan:
    """A fallback round's new queries join the stored plan, so that a resumed
    run finds them (and what they landed) again."""
    extended = plan.model_copy(update={"queries": plan.queries + [PlannedQuery(intent="web", text=t) for t in texts]})
    save_plan(task_id, run_id, PlanOutcome(extended), settings)
    return extended


@task(name="prepare-provider", **BUSY)
def prepare_task(name: str, task_id: str, settings: Settings) -> str:
    """What a provider does before the searches (the library: index what
    changed); files it could not read go to the error log."""
    prepared = build_provider(name, settings).prepare()
    if prepared.skipped:
        with open_catalog(settings, f"research: prepare {name}") as catalog:
            log_skipped_files(catalog, task_id, name, prepared.skipped)
    return prepared.summary


@task(name="landed-queries", **BUSY)
def landed_task(task_id: str, settings: Settings) -> set[str]:
    with open_catalog(settings, "research: resume check", read_only=True) as catalog:
        return landed_query_ids(catalog, task_id)


@task(name="search", cache_policy=NO_CACHE)
def search_task(call: SearchCall, task_id: str, settings: Settings, client,
                max_results: int | None = None) -> tuple[str, str, int, bool]:
    """One query at one provider; its bundle lands as soon as it arrives
    (with those of other searches that arrive while a landing commits)."""
    with provider_slot(call.provider, settings):
        provider = build_provider(call.provider, settings, client)
        bundle = search_bundle(provider, call, task_id=task_id, max_results=max_results or settings.max_results,
                               settings=settings, client=client)
        # honour a provider's terms on request rate (arXiv: one call per 3 s) while holding its slot
        time.sleep(provider.min_interval_seconds)
    landed = land_as_it_arrives(settings, bundle, source="research", purpose="research: land")
    if any(query_id == bundle.query_id for _, query_id, _ in landed.landed):
        bundles_landed_event([bundle.task_id], 1)
    failed = bundle.stats.failed_count > 0 and bundle.stats.kept_after_filter == 0
    return call.provider, call.query.query_id, len(bundle.results), failed


@task(name="consolidate", **BUSY)
def consolidate_task(task_id: str, settings: Settings) -> ConsolidationReport:
    with open_catalog(settings, "research: consolidate") as catalog:
        return consolidate(catalog, task_id)


@task(name="candidates", **BUSY)
def candidates_task(task_id: str, settings: Settings) -> list:
    with open_catalog(settings, "research: candidates", read_only=True) as catalog:
        return load_candidates(catalog, task_id)


@task(name="hard-filter", cache_policy=NO_CACHE)
def hard_filter_task(candidates: list) -> StageOutput:
    return hard_filter(candidates)


@task(name="coarse-filter", cache_policy=NO_CACHE)
def coarse_filter_task(question: str, candidates: list, llm: LLMConfig | None, client) -> StageOutput:
    return coarse_filter(question, candidates, llm, client=client)


@task(name="quality-filter", cache_policy=NO_CACHE)
def quality_filter_task(question: str, candidates: list, policy: Policy, target: int, settings: Settings,
                        client, online: bool, llm: LLMConfig | None) -> StageOutput:
    fetch = page_fetcher(settings, client) if online else None
    return quality_filter(question, candidates, policy, target, fetch=fetch,
                          llm=llm if policy.enable_llm_review else None, client=client)


@task(name="report", **BUSY)
def report_research_task(task_id: str, plan: ResearchPlan, source_ids: list[str], settings: Settings,
                         llm: LLMConfig | None) -> dict:
    """Synthesize and publish the report (in the lake, and as the run's
    markdown artifact); the catalog is open only to read the sources and to
    record the report, never while a model is called."""
    published = publish_report(settings, task_id, plan, question=plan.question, llm=llm,
                               source_ids=source_ids, purpose="research: report")
    report_artifact(task_id, render_markdown(published.report))
    return published.uris
