"""Stage 5 of the governed pipeline (docs/research.md): the quality filter. It reads
the body of the best candidates (their stored text, else the page), scores
it, has an LLM review it (optional, failing open), and keeps the best-ranked
`target` that pass the quality bar. The other filter stages are
tasks/selection/filters.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Literal

import httpx

from schemas.governance import Policy
from schemas.urls import url_scheme
from tasks.common.llm import (FORMAT_INSTRUCTIONS, REVIEW, AnswerShape, LLMConfig, LLMError, ModelSkipped, chat,
                              capped_list, capped_str)
from tasks.common.settings import Settings
from tasks.common.text import term_set
from tasks.selection.filters import QUALITY, Candidate, StageOutput, as_index, dropped
from tasks.retrieval.fetch import fetch_content
from tasks.retrieval.scoring import clamp

Fetch = Callable[[Candidate], "str | None"]
RELEVANCE_ORDER = {"high": 3, "medium": 2, None: 2, "low": 1}  # unreviewed ranks as medium
REVIEW_BATCH = 10
REVIEW_EXCERPT = 800

# quality = W_COVERAGE·coverage + W_LENGTH·length_band + W_SCORE·score_final, in [0, 1]:
#  coverage     share of the question's terms found in title + body
#  length_band  how much of an article the body is (see length_band)
#  score_final  the search-time score (relevance, freshness, authority)
W_COVERAGE, W_LENGTH, W_SCORE = 0.5, 0.2, 0.3
# The bar a body must reach to be selected ahead of the search's own order:
# at a middling score_final (0.5), a whole page holding a tenth of the
# question's terms, a 150-500 character snippet holding a third of them, a
# shorter one nearly half. The quality score is a coarse lexical check: it
# gates, it does not re-rank what the search ranked.
QUALITY_BAR = 0.4


def length_band(chars: int) -> float:
    """A snippet is not an article; a very long body is often a dump or an index."""
    if chars < 150:
        return 0.1
    if chars < 500:
        return 0.4
    if chars < 1500:
        return 0.7
    return 1.0 if chars <= 50_000 else 0.8


def quality_score(question: str, c: Candidate, body: str) -> float:
    wanted = term_set(question)
    coverage = len(wanted & term_set(f"{c.title or ''} {body}")) / len(wanted) if wanted else 0.5
    score = W_COVERAGE * coverage + W_LENGTH * length_band(len(body)) + W_SCORE * clamp(c.score_final)
    return round(clamp(score), 4)


def quality_filter(question: str, cands: Sequence[Candidate], policy: Policy, target: int,
                   fetch: Fetch | None = None, llm: LLMConfig | None = None,
                   client: httpx.Client | None = None) -> StageOutput:
    """Review the best `policy.max_detail_fetch` candidates by score_final (the
    rest are dropped unreviewed: the cap bounds fetches and LLM calls): read
    each body (content_text, else `fetch(c)`; a failed fetch scores the
    snippet and says so), score it, let the LLM rate relevance when
    policy.enable_llm_review and an LLM is configured ("low" is dropped;
    fail-open), and keep `target`: by the LLM's relevance (high, then
    medium or unreviewed), then those reaching QUALITY_BAR before those
    that do not, each in the search's order (score_final, final_rank) —
    the quality score is a gate, not a ranking of its own."""
    out = StageOutput(kept=[])
    order = sorted(cands, key=lambda c: -c.score_final)  # stable: final_rank breaks ties
    reviewed, unreviewed = order[:policy.max_detail_fetch], order[policy.max_detail_fetch:]
    out.drops += [dropped(c, QUALITY, f"not reviewed: beyond max_detail_fetch ({policy.max_detail_fetch}) "
                                    "by score_final") for c in unreviewed]
    bodies = [_body(c, fetch, out.notes) for c in reviewed]
    scored = [replace(c, quality=quality_score(question, c, body), note=note)
              for c, (body, note) in zip(reviewed, bodies)]
    if policy.enable_llm_review and llm is not None:
        scored = _review(question, scored, [b for b, _ in bodies], llm, client, out)
    # `scored` is in the search's order and the sort is stable: within a tier, that order stays.
    scored.sort(key=lambda c: (-RELEVANCE_ORDER.get(c.relevance, 2), c.quality < QUALITY_BAR))
    target = max(0, int(target))
    out.kept = scored[:target]
    out.drops += [dropped(c, QUALITY, f"beyond target count ({target})") for c in scored[target:]]
    return out


def _body(c: Candidate, fetch: Fetch | None, notes: list[str]) -> tuple[str, str | None]:
    """The text to judge and a note when it is only the snippet."""
    if (c.content_text or "").strip():
        return c.content_text, None
    if fetch is None:
        return c.snippet or "", None
    try:
        text = fetch(c)
        problem = None if (text or "").strip() else "fetch returned no text"
    except Exception as exc:  # noqa: BLE001 - any fetch failure costs the body, never the source
        text, problem = None, f"fetch failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    if problem:
        note = f"{problem}; judged on the snippet"
        notes.append(f"{c.url}: {note}")
        return c.snippet or "", note
    return text, None


def page_fetcher(settings: Settings, client: httpx.Client, allow_hosts: Iterable[str] = ()) -> Fetch:
    """A `fetch` for quality_filter reading pages with tasks.retrieval.fetch (checked
    for SSRF, size and time); file: URLs are not fetched (their text comes
    from the library index). Its RemoteError is what _body notes."""
    def fetch(c: Candidate) -> str | None:
        if not c.url or url_scheme(c.url) not in ("http", "https"):
            return None
        return fetch_content(c.url, settings, client, allow_hosts=allow_hosts).text
    return fetch


class Verdict(AnswerShape):
    index: int
    relevance: Literal["high", "medium", "low"]
    reason: capped_str(300)


# The review's JSON, as review_messages asks for it
class ReviewAnswer(AnswerShape):
    reviews: capped_list(Verdict, REVIEW_BATCH)


def review_messages(question: str, batch: Sequence[Candidate], bodies: Sequence[str]) -> list[dict]:
    parts = [f"[{i}] {c.title}\n{(body or '')[:REVIEW_EXCERPT]}" for i, (c, body) in enumerate(zip(batch, bodies), 1)]
    system = (
        "You review sources for a research question. Rate each numbered source's relevance to the "
        "question as high, medium or low; low means it does not help answer the question. "
        f"{FORMAT_INSTRUCTIONS} The JSON object has one key \"reviews\": a list of "
        "{\"index\": number, \"relevance\": \"high\"|\"medium\"|\"low\", \"reason\": short text}."
    )
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Question: {question}\n\nSources:\n\n" + "\n\n".join(parts)}]


def _review(question: str, scored: list[Candidate], bodies: list[str], llm: LLMConfig,
            client: httpx.Client | None, out: StageOutput) -> list[Candidate]:
    kept = []
    for start in range(0, len(scored), REVIEW_BATCH):
        batch, texts = scored[start:start + REVIEW_BATCH], bodies[start:start + REVIEW_BATCH]
        try:
            verdicts = _llm_review(question, batch, texts, llm, client)
        except ModelSkipped as exc:
            out.notes.append(f"quality review: the {len(scored) - start} sources from batch "
                             f"{start // REVIEW_BATCH + 1} on kept unreviewed: {exc}")
            return kept + scored[start:]
        except LLMError as exc:
            out.notes.append(f"quality review batch {start // REVIEW_BATCH + 1} kept unreviewed: {exc}")
            kept += batch
            continue
        for index, c in enumerate(batch, 1):
            relevance, reason = verdicts.get(index, (None, None))
            if relevance == "low":
                out.drops.append(dropped(c, QUALITY, f"LLM review: low relevance ({reason or 'no reason given'})"))
            else:
                kept.append(replace(c, relevance=relevance))
    return kept


def _llm_review(question: str, batch: Sequence[Candidate], bodies: Sequence[str], llm: LLMConfig,
                client: httpx.Client | None) -> dict[int, tuple[str, str | None]]:
    answer = chat(llm, review_messages(question, batch, bodies), kind=REVIEW, shape=ReviewAnswer, client=client)
    return answer.read(lambda doc: verdicts_of(doc, batch))


def verdicts_of(doc: dict, batch: Sequence[Candidate]) -> dict[int, tuple[str, str | None]]:
    """index → (relevance, reason) of the review's readable entries."""
    reviews = doc.get("reviews")
    if not isinstance(reviews, list):
        raise LLMError("the answer has no \"reviews\" list")
    verdicts = {}
    for entry in reviews:
        if not isinstance(entry, dict):
            continue
        index, relevance = as_index(entry.get("index")), str(entry.get("relevance", "")).strip().lower()
        # Entries we cannot place or read are ignored: that source stays unreviewed.
        if index is not None and 1 <= index <= len(batch) and relevance in ("high", "medium", "low"):
            verdicts[index] = (relevance, str(entry.get("reason") or "").strip()[:200] or None)
    return verdicts
