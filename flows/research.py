"""Research flow: a governed run from question to cited report.

pre-flight → plan → search every provider in parallel (each bundle lands as
it arrives) → consolidate → [search completeness gate] → hard, coarse and
quality filters → [filter sufficiency gate: fall back to unused keywords] →
publishers → report → [output gate]. One trace id (the flow run id) runs
through every stage; the run's budget bounds it (Prefect's flow timeout).
The run's model, when one is configured, is one LLMConfig whose ModelUse
(budget, breaker) every stage shares and no other run sees; what the run
spent on it is the `model` output of its record."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import httpx

from prefect import flow
from prefect.futures import as_completed
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from flows.artifacts import research_counts_artifact
from flows.research_tasks import (candidates_task, coarse_filter_task, consolidate_task, extend_plan_task,
                                  hard_filter_task, landed_task, plan_task, policy_task,
                                  prepare_task, quality_filter_task, report_research_task, search_task)
from flows.research_checks import check_request
from flows.run_view import RunView, end_dead_runs
from schemas.governance import Budget, Policy
from schemas.plan import ResearchPlan
from schemas.request import ResearchRequest
from tasks.common.llm import LLMConfig
from tasks.common.settings import Settings, research_settings
from tasks.lake.catalog import commit_scope
from tasks.selection.gates import (build_output, filter_sufficiency, output_check, search_completeness, sized_target,
                                    threshold, unused_keywords)
from tasks.common.http import make_client
from tasks.common.text import counted
from tasks.selection.preflight import preflight
from tasks.retrieval.providers.registry import enabled_names, provider_class
from tasks.selection.filters import aggregate_publishers
from tasks.records.heartbeat import keep_alive, lease_seconds
from tasks.records.runs import INTERRUPTED, published_report, record_outcome, run_finished, run_started
from tasks.records.summary import RunSummary
from tasks.retrieval.search import SearchCall, route
from schemas.errors import UserError

MAX_RESULTS = 50  # per query and provider: the deepest a search goes to reach the candidate target


class GateAbort(UserError, RuntimeError):
    """A gate stopped the run; the message is the gate's reason."""


@dataclass
class RunContext:
    """What every stage of one run reads: the request and what the run
    resolved from it, the HTTP client, the run's view (trace, events, terminal)."""

    request: ResearchRequest
    trace_id: str
    settings: Settings
    names: list[str]
    target: int
    budget: Budget
    policy: Policy
    client: httpx.Client
    view: RunView
    counts: dict  # what the run record's counts say so far
    query_prefix: str | None = None  # see research_flow
    llm: LLMConfig | None = None  # the run's model: its own budget and breaker

    @property
    def task_id(self) -> str:
        return self.request.task_id

    @property
    def question(self) -> str:
        return self.request.question


# the question's first words, Latin or Chinese (a run of Chinese is cut to 8 characters)
_ID_WORDS = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]{1,8}")


def new_task_id(question: str) -> str:
    """r<time>-<the question's first words>-<4 hex>: "r20261127-190603-刹车片多久换一次-75b2"."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    words = "-".join(_ID_WORDS.findall(question.lower())[:4])[:40].rstrip("-")
    return f"r{stamp}-{words or 'q'}-{uuid.uuid4().hex[:4]}"


@flow(name="searchlake-research", task_runner=ThreadPoolTaskRunner(max_workers=16))
def research_flow(question: str, task_id: str | None = None, library: str | None = None,
                  providers: list[str] | None = None, max_results: int | None = None,
                  target: int | None = None, demand_id: str = "default", budget: dict | None = None,
                  query_prefix: str | None = None) -> dict:
    """One research run. Its parameters are a ResearchRequest's fields
    (ResearchRequest.flow_parameters), so that Prefect shows and stores them
    one by one; the request is rebuilt from them here. query_prefix (a watch
    round's "r3."): this run's query ids start with it, so that the run
    searches afresh instead of resuming what earlier runs of the task landed."""
    request = ResearchRequest.build(question=question, task_id=task_id or new_task_id(question), library=library,
                                    providers=providers, max_results=max_results, target=target,
                                    demand_id=demand_id, budget=budget or {})
    settings = research_settings(library, providers, max_results)
    names = enabled_names(settings)
    preflight(settings, names)
    budget = settings.budget(request.budget.overrides())
    target = budget.cap_target(target or settings.target_count)
    task_id = request.task_id
    trace_id = flow_run.get_id() or uuid.uuid4().hex
    with commit_scope(f"research {task_id} run {trace_id}", task_id=task_id, flow_run_id=flow_run.get_id()):
        policy, policy_source = policy_task(demand_id, settings)
        end_dead_runs(settings)  # runs whose process died end as interrupted first (a resumed one among them)
        view = RunView(settings, task_id, trace_id)
        view.begin(run_plan_lines(trace_id, task_id, question, names, target, budget, policy, policy_source),
                   run_started(trace_id, task_id, question, demand_id, policy_source, budget, policy,
                               lease_seconds=lease_seconds(settings)),
                   request.model_dump(include={"library", "providers", "target"}))
        started = time.monotonic()
        counts = {"candidate_count": 0, "filtered_count": 0, "publisher_count": 0}
        llm = LLMConfig.from_settings(settings)
        with keep_alive(settings, trace_id, task_id):  # should this process die, readers see the run interrupted
            try:
                with make_client(settings) as client:
                    outputs = _run(RunContext(request, trace_id, settings, names, target, budget, policy, client,
                                              view, counts, query_prefix, llm))
            except BaseException as exc:
                outputs = outputs_if_published(settings, trace_id, exc)
                if outputs is None:
                    status, error = run_failure(exc, time.monotonic() - started)
                    view.fail(status, error, run_finished(trace_id, status, **counts, error=error,
                                                          outputs=model_outputs(llm),
                                                          elapsed_seconds=time.monotonic() - started,
                                                          stage_history=view.trace.history))
                    raise
                outputs.update(model_outputs(llm))
            elapsed = round(time.monotonic() - started, 3)  # as the row keeps it
            view.finish(outputs, run_finished(trace_id, "complete", **counts, outputs=outputs, elapsed_seconds=elapsed,
                                              stage_history=view.trace.history),
                        RunSummary(trace_id, task_id, "complete", policy_source, **counts, elapsed_seconds=elapsed,
                                   stage_history=view.trace.history, outputs=outputs))
        research_counts_artifact(task_id, outputs, counts, time.monotonic() - started)
    return {"trace_id": trace_id, "task_id": task_id, "providers": names, **outputs}


@flow(name="searchlake-research-deployment")
def research_deployment(question: str, task_id: str | None = None, library: str | None = None,
                        providers: list[str] | None = None, max_results: int | None = None,
                        target: int | None = None, demand_id: str = "default") -> dict:
    """The deployments' entry point: the request is checked and its budget
    (PIPELINE_TIMEOUT in the worker's environment) resolved when the run
    starts, and the research flow runs under it, as `searchlake research` runs it."""
    request = check_request(ResearchRequest.build(
        question=question, task_id=task_id, library=library, providers=providers, max_results=max_results,
        target=target, demand_id=demand_id))
    return timed_flow(request)(**request.flow_parameters())


def timed_flow(request: ResearchRequest):
    """The research flow under the checked request's time budget."""
    return research_flow.with_options(timeout_seconds=request.budget.timeout_seconds)


def model_outputs(llm: LLMConfig | None) -> dict:
    """What the run spent on its model and what became of it (ModelUse.record), when it has one."""
    return {"model": llm.use.record()} if llm is not None and llm.use is not None else {}


def outputs_if_published(settings: Settings, trace_id: str, exc: BaseException) -> dict | None:
    """What a run that raised leaves as its outputs when it had published its
    report, its last step: it is complete, and whatever came after — a
    worker that died (Prefect's console logging then raises SystemExit at
    the next line), a Ctrl-C, the time budget — interrupted nothing of it.
    None when it had not published it (or the lake cannot say)."""
    try:
        reports = published_report(settings, trace_id)
    except Exception:  # the lake cannot say: the run ends as it raised
        return None
    if reports is None:
        return None
    return {"report": reports.get("html"), "reports": reports,
            "after_the_report": said(exc)}


def said(exc: BaseException) -> str:
    """An exception in one line: its type, and its message when it has one."""
    message = str(exc).splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def run_failure(exc: BaseException, elapsed: float) -> tuple[str, str]:
    """The final status and one-line error of a run that raised. Prefect
    enforces the flow's timeout (the budget) by cancelling the flow body: what
    reaches us then is a CancelledError with no message, not a TimeoutError.
    A run told to stop (Ctrl-C, SystemExit) is interrupted, not failed."""
    if isinstance(exc, asyncio.CancelledError):
        return "timed_out", f"TimeoutError: the run exceeded its time budget after {elapsed:.1f} s"
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return INTERRUPTED, f"interrupted: {said(exc)}"
    if isinstance(exc, GateAbort):  # its message says what happened and what to do
        return "failed", str(exc).splitlines()[0]
    status = "timed_out" if "timeout" in type(exc).__name__.lower() else "failed"
    return status, f"{type(exc).__name__}: {exc}".splitlines()[0]


def _run(ctx: RunContext) -> dict:
    view, settings, counts = ctx.view, ctx.settings, ctx.counts
    with view.stage("plan", "planning queries") as detail:
        plan = plan_task(ctx.question, ctx.task_id, ctx.trace_id, settings, ctx.llm)
        detail.update(planner=plan.planner, queries=len(plan.queries), fallback_reason=plan.fallback_reason)
    for name in ctx.names:
        if label := provider_class(name).prepares:
            with view.stage("index", label) as detail:
                detail[name] = prepare_task(name, ctx.task_id, settings)
    search_stats, candidates = _search_to_target(ctx, plan)
    counts["candidate_count"] = len(candidates)
    if search_stats["exhausted"] and ctx.request.target is None:
        sized = sized_target(len(candidates), ctx.target, ctx.policy)
        if sized < ctx.target:
            view.terminal.note(f"target {sized} sources: the providers hold {len(candidates)} candidates")
            ctx.target = sized
    _gate(view, search_completeness(len(candidates), ctx.target, ctx.policy, deepest=search_stats["deepest"],
                                    exhausted=search_stats["exhausted"]))

    rounds = 0
    while True:
        selected, drops = _filter(ctx, candidates)
        gate = filter_sufficiency(selected, ctx.target, ctx.policy, rounds, ctx.budget.max_fallback_rounds)
        _gate(view, gate)
        if gate.outcome != "fallback":
            break
        rounds += 1
        used = [q.text for q in plan.queries]
        new_texts = unused_keywords(used, ctx.question, used, ctx.policy.max_keywords)
        if not new_texts:
            break
        plan = extend_plan_task(plan, new_texts, ctx.task_id, ctx.trace_id, settings)
        _search(ctx, plan, "fallback_search")
        candidates = _consolidate(ctx)
        counts["candidate_count"] = len(candidates)

    with view.stage("publishers", "grouping sources by publisher") as detail:
        publishers = aggregate_publishers(selected)
        detail["publishers"] = len(publishers)
    output = build_output(len(candidates), selected, publishers)
    counts.update(filtered_count=len(selected), publisher_count=len(publishers))
    output_key = record_outcome(settings, ctx.trace_id, ctx.task_id, selected, drops, publishers, output=output,
                                trace=view.trace)
    _gate(view, output_check(output))
    # the report is the run's last step: a run killed once it is out is complete (close_dead_runs)
    with view.stage("report", "writing the report") as detail:
        reports = report_research_task(ctx.task_id, plan, [c.source_id for c in selected], settings, ctx.llm)
        detail["report"] = reports.get("html")
    return {"question": plan.question, "planner": plan.planner, "fallback_reason": plan.fallback_reason,
            "fallback_rounds": rounds, **search_stats, "sources": len(candidates), "selected": len(selected),
            "report": reports.get("html"), "reports": reports, "output": output_key, **model_outputs(ctx.llm)}


def _search_to_target(ctx: RunContext, plan: ResearchPlan) -> tuple[dict, list]:
    """Search until the task holds target × min_candidate_multiplier
    candidates: each further round asks every planned query for twice as many
    results (up to MAX_RESULTS), and stops early when a round brings nothing
    new (the providers are exhausted). A provider to which more results cost
    nothing is asked for all the run needs in the first round, and again only
    for more than that, and only while it gave all it was asked for. The
    completeness gate judges after."""
    stats = _search(ctx, plan, "search")
    gave_all = stats.pop("gave_all")
    candidates = _consolidate(ctx)
    needed = _needed(ctx)
    depth, deepest = ctx.settings.max_results, max(_first_depth(ctx, name) for name in ctx.names)
    exhausted = set(ctx.names) <= gave_all and not stats["failed_searches"]
    while len(candidates) < needed and not exhausted and depth < MAX_RESULTS:
        depth = min(MAX_RESULTS, depth * 2)
        names = [name for name in ctx.names if name not in gave_all and _first_depth(ctx, name) < depth]
        if not names:
            continue  # those that may have more were asked for this many in the first round
        more = _search(ctx, plan, "deeper_search", depth=depth, names=names)
        gave_all |= more.pop("gave_all")
        deepest = depth
        stats = {key: stats[key] + more[key] for key in ("searches", "resumed", "failed_searches")}
        found = len(candidates)
        candidates = _consolidate(ctx)
        if len(candidates) == found:
            exhausted = not more["failed_searches"]  # a failed search may yet have more to give
            break
    return {**stats, "deepest": deepest, "exhausted": exhausted}, candidates


def _needed(ctx: RunContext) -> int:
    """The candidates the search completeness gate asks for."""
    return threshold(ctx.target, ctx.policy.min_candidate_multiplier)


def _first_depth(ctx: RunContext, name: str) -> int:
    """The results a first round asks a provider for: the setting, or, from
    a provider to which more results cost nothing (the library), as many as
    the run needs: one round instead of two, and the same sources."""
    if provider_class(name).answers_in_full:
        return min(MAX_RESULTS, max(ctx.settings.max_results, _needed(ctx)))
    return ctx.settings.max_results


def deeper(calls: list[SearchCall], depth: int) -> list[SearchCall]:
    """The same searches asking for `depth` results, under query ids of their
    own (q1.library.n20) so that a resumed run knows which depths landed."""
    return [replace(call, query=replace(call.query, query_id=f"{call.query.query_id}.n{depth}")) for call in calls]


def prefixed(calls: list[SearchCall], prefix: str) -> list[SearchCall]:
    """The same searches under query ids that start with `prefix` (r3.q1.library)."""
    return [replace(call, query=replace(call.query, query_id=f"{prefix}{call.query.query_id}")) for call in calls]


def _search(ctx: RunContext, plan: ResearchPlan, stage: str, depth: int | None = None,
            names: list[str] | None = None) -> dict:
    """One round: every planned query at each of `names` (all the run's
    providers), asked for `depth` results (a deeper round) or for its first
    depth. Its counts, and `gave_all`: the providers to which more results
    cost nothing that returned fewer than asked to every query, so have no more."""
    names, view = names or ctx.names, ctx.view
    calls = route(plan, {name: provider_class(name) for name in ctx.names})
    calls = [call for call in calls if call.provider in names]
    if ctx.query_prefix:
        calls = prefixed(calls, ctx.query_prefix)
    asked = ([(call, _first_depth(ctx, call.provider)) for call in calls] if depth is None
             else [(call, depth) for call in deeper(calls, depth)])
    landed = landed_task(ctx.task_id, ctx.settings)
    pending = [(call, asked_for) for call, asked_for in asked if call.query.query_id not in landed]
    failed = 0
    filled = {name for name in names if not provider_class(name).answers_in_full}
    filled |= {call.provider for call, _ in asked if call.query.query_id in landed}  # resumed: unknown
    wanted = {call.query.query_id: asked_for for call, asked_for in pending}
    label = f"searching {counted(len(names), 'provider')}" + (f", {depth} results each" if depth else "")
    with view.stage(stage, label) as detail:
        view.searches_planned(len(pending))
        futures = [search_task.submit(call, ctx.task_id, ctx.settings, ctx.client, asked_for)
                   for call, asked_for in pending]
        for future in as_completed(futures):
            provider, query_id, items, call_failed = future.result()
            failed += call_failed
            if call_failed or items >= wanted[query_id]:
                filled.add(provider)
            view.search_done(provider, query_id, items, call_failed)
        detail.update(searches=len(pending), resumed=len(asked) - len(pending), failed=failed)
    return {"searches": len(asked), "resumed": len(asked) - len(pending), "failed_searches": failed,
            "gave_all": set(names) - filled}


def _consolidate(ctx: RunContext) -> list:
    with ctx.view.stage("consolidate", "deduplicating and ranking") as detail:
        report = consolidate_task(ctx.task_id, ctx.settings)
        detail.update(sources=report.sources_written, new_sources=report.new_sources,
                      failed_logged=report.failed_logged)
    return candidates_task(ctx.task_id, ctx.settings)


def _filter(ctx: RunContext, candidates: list):
    drops, view = [], ctx.view
    with view.stage("hard_filter", "dropping unusable results") as detail:
        kept, dropped = hard_filter_task(candidates)
        drops += dropped
        detail.update(kept=len(kept), dropped=len(dropped))
    with view.stage("coarse_filter", "screening titles") as detail:
        kept, dropped = coarse_filter_task(ctx.question, kept, ctx.llm, ctx.client)
        drops += dropped
        detail.update(kept=len(kept), dropped=len(dropped))
    with view.stage("quality_filter", "reading and scoring the best sources") as detail:
        online = any(provider_class(name).finds_web_pages for name in ctx.names)
        kept, dropped = quality_filter_task(ctx.question, kept, ctx.policy, ctx.target, ctx.settings, ctx.client,
                                            online, ctx.llm)
        drops += dropped
        detail.update(kept=len(kept), dropped=len(dropped))
    return kept, drops


def _gate(view: RunView, result) -> None:
    view.gate(result)
    if result.outcome == "abort":
        raise GateAbort(result.reason)


def run_plan_lines(trace_id, task_id, question, names, target, budget, policy, policy_source) -> list[str]:
    return [
        f"trace id: {trace_id}",
        f"task id:  {task_id}",
        f"question: {question}",
        "stages:   plan → search → consolidate → hard/coarse/quality filter → publishers → report",
        f"providers: {', '.join(names)}; target {target} sources",
        f"budget:   timeout {budget.timeout_seconds} s, max target {budget.max_target_count}, "
        f"max fallback rounds {budget.max_fallback_rounds}",
        f"policy:   {policy_source} — " + ", ".join(f"{k}={v}" for k, v in policy.to_dict().items()),
    ]
