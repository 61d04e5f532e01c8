"""The filter stages of the governed pipeline (docs/research.md, steps 7 and 9) over the
consolidated sources of a task:

  hard_filter           rules that need no judgement: duplicates, no title or
                        URL, a scheme other than http(s)/file, impossible dates
  coarse_filter         title screening against the question; lenient: only
                        the clearly irrelevant go
  quality_filter        (tasks/selection/quality.py) read the body of the
                        best candidates, score it, have an LLM review it
                        (optional), keep the best-ranked `target` that pass
                        the quality bar
  aggregate_publishers  who published what was selected

Every stage returns a StageOutput: the kept candidates, a Drop for every
candidate removed (stage + a reason a reader understands), and notes on what
went wrong without stopping the stage. LLM steps fail open: an LLM that
cannot be reached or answers nonsense costs us its judgement, never sources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx

from schemas.governance import LOCAL_LIBRARY, Drop, Publisher
from schemas.timestamps import to_utc
from schemas.urls import UnsafeURL, check_lake_url, domain_of, normalize_url, url_scheme
from tasks.lake.catalog import Catalog
from tasks.common.llm import (FORMAT_INSTRUCTIONS, SCREEN, AnswerShape, LLMConfig, LLMError, ModelSkipped, chat,
                              capped_list)
from tasks.common.text import term_set

HARD, COARSE, QUALITY = "hard_filter", "coarse_filter", "quality_filter"
CANDIDATE_FIELDS = ("source_id", "url", "title", "snippet", "content_text", "published_at",
                    "score_final", "provider", "query_id", "final_rank")


@dataclass(frozen=True)
class Candidate:
    """One consolidated source on its way through the filters. quality and
    relevance are set by quality_filter; note says what it had to make do
    with (e.g. a failed fetch)."""

    source_id: str | None
    url: str | None
    title: str | None
    snippet: str | None = None
    content_text: str | None = None
    published_at: datetime | None = None
    score_final: float = 0.0
    provider: str | None = None
    query_id: str | None = None
    final_rank: int | None = None
    quality: float | None = None
    relevance: str | None = None  # high | medium | low from the LLM review; None: not reviewed
    note: str | None = None


@dataclass
class StageOutput:
    kept: list[Candidate]
    drops: list[Drop] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __iter__(self):
        # `kept, drops = hard_filter(...)` reads naturally; notes stay an attribute.
        return iter((self.kept, self.drops))


def candidates_from_rows(rows: Iterable[Sequence | Mapping], columns: Sequence[str] | None = None) -> list[Candidate]:
    """Candidates from consolidated rows: tuples with their column names (as
    a DuckDB cursor gives them) or mappings. Unknown columns are ignored."""
    found = []
    for row in rows:
        values = row if isinstance(row, Mapping) else dict(zip(columns or (), row))
        picked = {name: values.get(name) for name in CANDIDATE_FIELDS}
        picked["score_final"] = float(picked["score_final"] or 0.0)
        found.append(Candidate(**picked))
    return found


def load_candidates(catalog: Catalog, task_id: str) -> list[Candidate]:
    """The consolidated sources of a task, in final_rank order."""
    cursor = catalog.run("governance_candidates", [task_id])
    return candidates_from_rows(cursor.fetchall(), [d[0] for d in cursor.description])


def dropped(c: Candidate, stage: str, reason: str) -> Drop:
    return Drop(source_id=c.source_id, url=c.url, title=c.title, stage=stage, reason=reason)


# -- Stage 3: hard filter -----------------------------------------------------

FUTURE_SLACK = timedelta(days=1)  # time zones and providers' clocks disagree by hours
EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)


def hard_filter(cands: Sequence[Candidate], now: datetime | None = None) -> StageOutput:
    """Drop what is unusable whatever the question: no title, no URL, a URL
    that is not http(s) or file: (the user's library is legitimate), a
    publication date in the future (beyond a day of slack) or before 1900;
    then duplicates by normalized URL, the first (best-ranked) one kept."""
    now = to_utc(now or datetime.now(timezone.utc))
    out = StageOutput(kept=[])
    first_of: dict[str, Candidate] = {}
    for c in cands:
        reason = _unusable(c, now)
        if reason:
            out.drops.append(dropped(c, HARD, reason))
            continue
        key = normalize_url(c.url)
        if key in first_of:
            out.drops.append(dropped(c, HARD, f"duplicate of {first_of[key].source_id or first_of[key].url} (same normalized URL)"))
            continue
        first_of[key] = c
        out.kept.append(c)
    return out


def _unusable(c: Candidate, now: datetime) -> str | None:
    if not (c.title or "").strip():
        return "no title"
    if not (c.url or "").strip():
        return "no URL"
    try:
        check_lake_url(c.url)
    except UnsafeURL:
        scheme = url_scheme(c.url) or "none"
        return f"URL scheme {scheme!r} is not http, https or file" if scheme not in ("http", "https") else "URL has no host"
    if c.published_at is not None:
        published = to_utc(c.published_at)
        if published > now + FUTURE_SLACK:
            return f"publication date {published.date().isoformat()} is in the future"
        if published < EARLIEST:
            return f"publication date {published.date().isoformat()} is before 1900"
    return None




# -- Stage 4: coarse filter ---------------------------------------------------

# The lexical screen drops a candidate only when BOTH hold:
#  - its title + snippet (or the start of content_text) share no content term
#    with the question (tasks.common.text.term_set: stopwords out, Porter-stemmed,
#    CJK as character bigrams), and
#  - its score_final is below LEXICAL_LOW_SCORE. With no shared term the
#    lexical relevance is 0, so score_final <= 0.4 unless the provider scored
#    relevance itself (semantic search, translations): those keep their place.
# A question without content terms screens nothing.
LEXICAL_LOW_SCORE = 0.35
SCREEN_BATCH = 20  # titles the model screens in one call
# A lenient screen of what the question's own searches found calls at most
# this share of a batch (of 4 titles or more) clearly irrelevant; an answer
# that calls more is the model's failure, not the searches' (a 270M model
# dropped 80 of 270 titles, the relevant among them).
MOST_SCREENED_OUT = 0.5


def coarse_filter(question: str, cands: Sequence[Candidate], llm: LLMConfig | None = None,
                  client: httpx.Client | None = None, batch_size: int = SCREEN_BATCH) -> StageOutput:
    """Screen titles against the question, in batches of `batch_size`: by the
    LLM when one is configured (a failing batch passes whole: fail-open),
    else by the lexical rule above — as are the titles left once the run no
    longer calls the model, as a run without one would screen them."""
    if llm is None:
        return _lexical_screen(question, cands)
    out = StageOutput(kept=[])
    size = max(1, batch_size)
    for start in range(0, len(cands), size):
        batch = list(cands[start:start + size])
        try:
            irrelevant = _llm_screen(question, batch, llm, client)
        except ModelSkipped as exc:
            rest = _lexical_screen(question, cands[start:])
            out.kept += rest.kept
            out.drops += rest.drops
            out.notes.append(f"coarse filter: the {len(cands) - start} titles from batch {start // size + 1} on "
                             f"were screened by their terms: {exc}")
            break
        except LLMError as exc:
            out.notes.append(f"coarse filter batch {start // size + 1} passed unscreened: {exc}")
            out.kept += batch
            continue
        for index, c in enumerate(batch, 1):
            if index in irrelevant:
                out.drops.append(dropped(c, COARSE, "title judged clearly irrelevant to the question (LLM screen)"))
            else:
                out.kept.append(c)
    return out


def _lexical_screen(question: str, cands: Sequence[Candidate]) -> StageOutput:
    wanted = term_set(question)
    out = StageOutput(kept=[])
    for c in cands:
        text = f"{c.title or ''} {c.snippet or (c.content_text or '')[:1000]}"
        if wanted and not (wanted & term_set(text)) and c.score_final < LEXICAL_LOW_SCORE:
            out.drops.append(dropped(c, COARSE, f"shares no term with the question and score_final "
                                              f"{c.score_final:.2f} < {LEXICAL_LOW_SCORE}"))
        else:
            out.kept.append(c)
    return out


# The title screen's JSON, as coarse_messages asks for it
class ScreenAnswer(AnswerShape):
    irrelevant: capped_list(int, SCREEN_BATCH)


def coarse_messages(question: str, batch: Sequence[Candidate]) -> list[dict]:
    titles = "\n".join(f"[{i}] {c.title}" for i, c in enumerate(batch, 1))
    system = (
        "You screen search results by title for a research question. Be lenient: list only titles "
        "that are clearly irrelevant to the question; when in doubt, keep the title. "
        f"{FORMAT_INSTRUCTIONS} The JSON object has one key \"irrelevant\": the list of the numbers "
        "of the clearly irrelevant titles (an empty list when none is)."
    )
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Question: {question}\n\nTitles:\n{titles}"}]


def _llm_screen(question: str, batch: Sequence[Candidate], llm: LLMConfig, client: httpx.Client | None) -> set[int]:
    """The 1-based numbers the LLM calls clearly irrelevant; LLMError when the
    call or its answer is unusable (then the batch passes whole)."""
    answer = chat(llm, coarse_messages(question, batch), kind=SCREEN, shape=ScreenAnswer, client=client)
    return answer.read(lambda doc: screened_numbers(doc, batch))


def screened_numbers(doc: dict, batch: Sequence[Candidate]) -> set[int]:
    listed = doc.get("irrelevant")
    if not isinstance(listed, list):
        raise LLMError("the answer has no \"irrelevant\" list")
    numbers = set()
    for item in listed:
        number = as_index(item)
        if number is None or not 1 <= number <= len(batch):
            # An answer that names titles we did not send is not to be trusted at all.
            raise LLMError(f"the answer lists {item!r}, not a title number 1-{len(batch)}")
        numbers.add(number)
    if len(batch) >= 4 and len(numbers) > MOST_SCREENED_OUT * len(batch):
        raise LLMError(f"the answer calls {len(numbers)} of {len(batch)} titles clearly irrelevant, more than a "
                       "lenient screen of what the question's searches found does")
    return numbers


def as_index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().strip("[]").isdigit():
        return int(value.strip().strip("[]"))
    return None


# -- Stage 6: publishers ------------------------------------------------------

def publisher_of(url: str | None) -> str:
    """The host without "www." (see schemas.governance.Publisher for why not
    the registrable domain); every file: URL is the user's "local library"."""
    if url and url_scheme(url) == "file":
        return LOCAL_LIBRARY
    return domain_of(url or "") or "unknown"


def aggregate_publishers(cands: Sequence[Candidate]) -> list[Publisher]:
    """Publishers of the candidates, most articles first (then first seen)."""
    found: dict[str, Publisher] = {}
    for c in cands:
        pub = found.setdefault(publisher_of(c.url), Publisher(publisher_of(c.url)))
        if c.source_id in pub.source_ids or (c.source_id is None and c.url in pub.source_urls):
            continue
        pub.article_count += 1
        if c.title and c.title not in pub.sample_titles and len(pub.sample_titles) < Publisher.MAX_SAMPLE_TITLES:
            pub.sample_titles.append(c.title)
        if c.url and c.url not in pub.source_urls:
            pub.source_urls.append(c.url)
        if c.source_id:
            pub.source_ids.append(c.source_id)
    return sorted(found.values(), key=lambda p: -p.article_count)
