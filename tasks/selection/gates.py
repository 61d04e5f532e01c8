"""The gates of the governed pipeline (docs/research.md): checks after a stage that
decide whether the run goes on (pass, warn), searches again with new
keywords (fallback) or ends as failed (abort). Each returns a GateResult
whose reason names the numbers it judged."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence, Sized
from itertools import combinations
from typing import Any

from schemas.governance import GateResult, Policy, Publisher
from tasks.common.text import keywords

SEARCH_COMPLETENESS = "search_completeness"
FILTER_SUFFICIENCY = "filter_sufficiency"
OUTPUT_CHECK = "output_check"


def threshold(target: int, factor: float) -> int:
    """The smallest count that reaches target × factor. Rounded first: in
    floats 10 × 1.2 is 12.000000000000002, and 12 must be enough."""
    return math.ceil(round(target * factor, 9))


def _count(value: int | Sized) -> int:
    return value if isinstance(value, int) else len(value)


# -- after the search -----------------------------------------------------------

def search_completeness(candidates: int | Sized, target: int, policy: Policy,
                        deepest: int | None = None, exhausted: bool = False) -> GateResult:
    """Enough candidates to filter down to `target`? >= target × min_candidate_multiplier
    passes, >= target × near_enough_candidate_multiplier warns, fewer aborts —
    unless the providers are `exhausted` (a deeper search brought nothing
    new): then the run goes on, warned, with what exists, since no search
    could find more. `deepest`: the most results the search asked each query for."""
    count = _count(candidates)
    enough = threshold(target, policy.min_candidate_multiplier)
    near = threshold(target, policy.near_enough_candidate_multiplier)
    metrics = {"candidates": count, "target": target, "pass_at": enough, "warn_at": near}
    if count >= enough:
        return GateResult(SEARCH_COMPLETENESS, "pass", f"{count} candidate sources, at least the {enough} wanted "
                          f"(target {target} x {policy.min_candidate_multiplier:g})", metrics)
    if count >= near:
        return GateResult(SEARCH_COMPLETENESS, "warn", f"{count} candidate sources, fewer than the {enough} wanted "
                          f"(target {target} x {policy.min_candidate_multiplier:g}) but at least {near} "
                          f"(x {policy.near_enough_candidate_multiplier:g}); going on", metrics)
    depth = f", even asking each query for {deepest} results" if deepest else ""
    if exhausted and count:
        return GateResult(SEARCH_COMPLETENESS, "warn", f"only {count} candidate sources, fewer than the {near} "
                          f"wanted (target {target} x {policy.near_enough_candidate_multiplier:g}), but the "
                          f"providers have nothing more{depth}; going on with what there is", metrics)
    fewer = max(1, math.floor(count / policy.near_enough_candidate_multiplier)) if count else None
    advice = (f"ask for fewer sources with --target {fewer}, or " if fewer and fewer < target else "")
    return GateResult(SEARCH_COMPLETENESS, "abort", f"the search found only {count} candidate sources{depth}; "
                      f"selecting {target} needs at least {near} (target x "
                      f"{policy.near_enough_candidate_multiplier:g}). To go on, {advice}search documents that "
                      f"cover the question with --library FOLDER, or add providers with --providers", metrics)


def sized_target(candidates: int, target: int, policy: Policy) -> int:
    """The default target cut to what `candidates` can give once the
    providers have nothing more (a small library is no incomplete search):
    at most candidates / min_candidate_multiplier, at least 1."""
    return max(1, min(target, math.floor(candidates / policy.min_candidate_multiplier)))


# -- after the quality filter ---------------------------------------------------

def filter_sufficiency(selected: int | Sized, target: int, policy: Policy, rounds_used: int,
                       max_rounds: int) -> GateResult:
    """Enough sources selected? >= target passes, >= filter_near_ratio × target
    warns; fewer falls back to another search round while rounds remain, and
    once they are spent the run accepts what it has, with a warning.
    Deviation: nothing selected after the last round aborts, since a report
    without sources answers nothing."""
    count = _count(selected)
    near = threshold(target, policy.filter_near_ratio)
    metrics = {"selected": count, "target": target, "warn_at": near,
               "rounds_used": rounds_used, "max_rounds": max_rounds}
    if count >= target:
        return GateResult(FILTER_SUFFICIENCY, "pass", f"{count} selected >= target {target}", metrics)
    if count >= near:
        return GateResult(FILTER_SUFFICIENCY, "warn", f"{count} selected, fewer than target {target} but "
                          f">= {near} (x {policy.filter_near_ratio:g})", metrics)
    if rounds_used < max_rounds:
        return GateResult(FILTER_SUFFICIENCY, "fallback", f"only {count} selected, fewer than {near}; "
                          f"searching again (round {rounds_used + 1} of {max_rounds})", metrics)
    if count == 0:
        return GateResult(FILTER_SUFFICIENCY, "abort", f"no source survived the filters after "
                          f"{rounds_used} fallback rounds: the sources found do not answer the question. Search "
                          f"documents that cover it with --library FOLDER, or add providers with --providers",
                          metrics)
    return GateResult(FILTER_SUFFICIENCY, "warn", f"accepting {count} after {rounds_used} fallback rounds "
                      f"(target {target})", metrics)


def unused_keywords(plan_queries_texts: Iterable[str], question: str, used: Iterable[str],
                    max_keywords: int) -> list[str]:
    """Up to `max_keywords` new queries for a fallback round: first each term
    of the question and the plan that no query used yet, joined to the
    question's first term (its topic) so the query stays on subject; then
    pairs of the terms in order of appearance. No query already run comes
    back (compared case- and space-insensitively)."""
    used = list(used)
    ran = {_normal(text) for text in used}
    used_terms = {term.casefold() for text in used for term in keywords(text)}
    pool = _unique_terms([question, *plan_queries_texts])
    anchor = next(iter(keywords(question)), None)
    fresh = [t for t in pool if t.casefold() not in used_terms]
    proposals = [t if anchor is None or t.casefold() == anchor.casefold() else f"{anchor} {t}" for t in fresh]
    proposals += [f"{a} {b}" for a, b in combinations(pool, 2)]
    chosen: list[str] = []
    for text in proposals:
        if len(chosen) >= max_keywords:
            break
        if _normal(text) not in ran and _normal(text) not in {_normal(c) for c in chosen}:
            chosen.append(text)
    return chosen


def _unique_terms(texts: Iterable[str]) -> list[str]:
    seen, kept = set(), []
    for text in texts:
        for term in keywords(text or ""):
            if term.casefold() not in seen:
                seen.add(term.casefold())
                kept.append(term)
    return kept


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


# -- after the output is built ---------------------------------------------------

def build_output(candidate_count: int, selected: Sequence[Any], publishers: Sequence[Publisher]) -> dict:
    """The structured output of a run (its output stage), the shape
    output_check checks: counts, the selected sources best first, their
    publishers, and which publisher published which source."""
    return {
        "candidate_count": candidate_count,
        "filtered_count": len(selected),
        "publisher_count": len(publishers),
        "selected": [{"rank": i, "source_id": c.source_id, "url": c.url, "title": c.title,
                      "quality": c.quality, "relevance": c.relevance, "score_final": c.score_final}
                     for i, c in enumerate(selected, 1)],
        "publishers": [{k: v for k, v in p.to_dict().items() if k != "source_ids"} for p in publishers],
        "publisher_sources": [{"publisher": p.publisher, "source_id": s} for p in publishers for s in p.source_ids],
    }


def output_check(output: Mapping[str, Any]) -> GateResult:
    """Pass when the output is consistent, else abort naming the first broken rule."""
    problem = _output_problem(output)
    metrics = {k: output.get(k) for k in ("candidate_count", "filtered_count", "publisher_count")} \
        if isinstance(output, Mapping) else {}
    if problem:
        return GateResult(OUTPUT_CHECK, "abort", problem, metrics)
    return GateResult(OUTPUT_CHECK, "pass", "counts agree and every publisher-source relation resolves", metrics)


def _output_problem(output: Mapping[str, Any]) -> str | None:
    if not isinstance(output, Mapping):
        return "the output is not an object"
    for key in ("candidate_count", "filtered_count", "publisher_count"):
        if not isinstance(output.get(key), int) or isinstance(output.get(key), bool):
            return f"{key} is missing or not an integer"
    for key in ("selected", "publishers", "publisher_sources"):
        if not isinstance(output.get(key), list):
            return f"{key} is missing or not a list"
    selected, publishers, relations = output["selected"], output["publishers"], output["publisher_sources"]
    if output["candidate_count"] < output["filtered_count"]:
        return f"candidate_count {output['candidate_count']} < filtered_count {output['filtered_count']}"
    if output["filtered_count"] != len(selected):
        return f"filtered_count {output['filtered_count']} != {len(selected)} selected sources"
    if output["publisher_count"] != len(publishers):
        return f"publisher_count {output['publisher_count']} != {len(publishers)} publishers"
    source_ids = {s.get("source_id") for s in selected if isinstance(s, Mapping)}
    names = {p.get("publisher") for p in publishers if isinstance(p, Mapping)}
    for relation in relations:
        if not isinstance(relation, Mapping):
            return "a publisher_sources entry is not an object"
        if relation.get("source_id") not in source_ids:
            return f"relation to source {relation.get('source_id')!r}, which is not selected"
        if relation.get("publisher") not in names:
            return f"relation to publisher {relation.get('publisher')!r}, which is not listed"
    related = {r.get("source_id") for r in relations}
    for source_id in sorted(s for s in source_ids if s is not None):
        if source_id not in related:
            return f"selected source {source_id!r} has no publisher"
    return None
