"""The filter stages: hard rules, the lenient title screen (lexical and LLM,
fail-open), the quality filter and the publisher grouping. The LLM is
replaced at the network edge by an httpx.MockTransport."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from schemas.governance import Policy
from tasks.common.llm import LLMConfig
from tasks.selection.filters import (Candidate, aggregate_publishers, candidates_from_rows, coarse_filter, hard_filter,
                                      load_candidates)
from tasks.selection.quality import QUALITY_BAR, quality_filter, quality_score

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
LLM = LLMConfig(base_url="https://llm.test/v1", model="test-model")
QUESTION = "How does Python's garbage collector handle reference cycles?"


def cand(n: int, url: str | None = None, title: str | None = "default", score: float = 0.5, **fields) -> Candidate:
    return Candidate(source_id=f"s{n}", url=url if url is not None else f"https://site{n}.org/page",
                     title=f"Python garbage collector article {n}" if title == "default" else title,
                     score_final=score, final_rank=n, **fields)


def completion(content: str) -> httpx.Response:
    return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": content}}],
                                     "model": "test-model"})


def answer(doc: dict) -> httpx.Response:
    return completion(f"---THOUGHT---\nlooked at them\n---JSON---\n{json.dumps(doc)}")


class FakeLLM:
    """Answers each request with the next queued response (or exception)."""

    def __init__(self, *responses):
        self.queue = list(responses)
        self.prompts: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.prompts.append(json.loads(request.content)["messages"][-1]["content"])
        item = self.queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))


# -- candidates -----------------------------------------------------------------

def test_candidates_from_rows_reads_tuples_and_mappings():
    columns = ["task_id", "source_id", "url", "title", "score_final", "final_rank", "snippet"]
    rows = [("t1", "a", "https://a.org/", "A", 0.7, 1, "snip")]
    (c,) = candidates_from_rows(rows, columns)
    assert (c.source_id, c.url, c.title, c.score_final, c.final_rank, c.snippet) == ("a", "https://a.org/", "A", 0.7, 1, "snip")
    (m,) = candidates_from_rows([{"source_id": "b", "url": "u", "title": "B", "score_final": None}])
    assert m.score_final == 0.0 and m.content_text is None


def test_load_candidates_reads_the_consolidated_view(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.org/x", 0.9), new_item("https://b.org/y", 0.4)]))
    lake.ingest(inbox.folder)
    lake.consolidate("t1")
    from tasks.lake.catalog import open_catalog
    with open_catalog(lake.settings, "test") as catalog:
        found = load_candidates(catalog, "t1")
    assert [c.url for c in found] == ["https://a.org/x", "https://b.org/y"]
    assert found[0].final_rank == 1 and found[0].title == "title of https://a.org/x"


# -- hard filter ------------------------------------------------------------------

def test_hard_filter_rules():
    cands = [
        cand(1, "https://example.org/a?utm_source=x"),
        cand(2, "https://EXAMPLE.org/a"),                       # same normalized URL as 1
        cand(3, title="  "),
        cand(4, url=""),
        cand(5, "javascript:alert(1)"),
        cand(6, "ftp://files.example.org/x"),
        cand(7, "https://"),                                   # no host
        cand(8, published_at=NOW + timedelta(days=3)),
        cand(9, published_at=datetime(1850, 1, 1)),            # naive: read as UTC
        cand(10, "file:///home/me/library/notes.md"),
        cand(11, published_at=NOW + timedelta(hours=20)),      # within a day of slack
        cand(12, published_at=NOW - timedelta(days=400)),
    ]
    kept, drops = hard_filter(cands, NOW)
    assert [c.source_id for c in kept] == ["s1", "s10", "s11", "s12"]
    reasons = {d.source_id: d.reason for d in drops}
    assert reasons["s2"].startswith("duplicate of s1")
    assert reasons["s3"] == "no title"
    assert reasons["s4"] == "no URL"
    assert "'javascript'" in reasons["s5"] and "'ftp'" in reasons["s6"]
    assert reasons["s7"] == "URL has no host"
    assert "in the future" in reasons["s8"] and "before 1900" in reasons["s9"]
    assert {d.stage for d in drops} == {"hard_filter"}
    assert all(d.url is not None and d.title is not None for d in drops)


def test_hard_filter_keeps_the_valid_copy_of_a_duplicate():
    # The first copy is unusable (no title): the second one is the source.
    kept, drops = hard_filter([cand(1, "https://a.org/x", title=""), cand(2, "https://a.org/x")], NOW)
    assert [c.source_id for c in kept] == ["s2"]
    assert [d.reason for d in drops] == ["no title"]


# -- coarse filter: lexical -----------------------------------------------------------

def test_lexical_screen_drops_only_the_clearly_irrelevant():
    cands = [
        cand(1, title="Reference cycles and the garbage collector", score=0.2),
        cand(2, title="Best pizza recipes in Naples", score=0.2),                 # no shared term, low score: dropped
        cand(3, title="Best pizza recipes in Naples", score=0.6),                 # provider thinks it relevant: kept
        cand(4, title="Memory management", snippet="How Python frees objects", score=0.1),  # term in snippet
        cand(5, title="Untitled", content_text="The gc module finds reference cycles.", score=0.1),
    ]
    kept, drops = coarse_filter(QUESTION, cands, llm=None)
    assert [c.source_id for c in kept] == ["s1", "s3", "s4", "s5"]
    assert [(d.source_id, d.stage) for d in drops] == [("s2", "coarse_filter")]
    assert "shares no term" in drops[0].reason


def test_lexical_screen_is_cjk_aware():
    cands = [cand(1, title="大语言模型用于医疗诊断的综述", score=0.1), cand(2, title="今日天气晴朗", score=0.1)]
    kept, drops = coarse_filter("大语言模型在医疗诊断中的应用", cands, llm=None)
    assert [c.source_id for c in kept] == ["s1"] and [d.source_id for d in drops] == ["s2"]


def test_lexical_screen_keeps_everything_for_a_question_without_terms():
    kept, drops = coarse_filter("what is the", [cand(1, title="Pizza", score=0.0)], llm=None)
    assert len(kept) == 1 and not drops


# -- coarse filter: LLM -------------------------------------------------------------

def test_llm_screen_drops_the_listed_titles_in_batches():
    fake = FakeLLM(answer({"irrelevant": [2]}), answer({"irrelevant": []}))
    cands = [cand(i) for i in range(1, 5)]
    with fake.client() as client:
        out = coarse_filter(QUESTION, cands, llm=LLM, client=client, batch_size=3)
    assert [c.source_id for c in out.kept] == ["s1", "s3", "s4"]
    assert [d.source_id for d in out.drops] == ["s2"] and "LLM" in out.drops[0].reason
    assert len(fake.prompts) == 2
    assert "[1] Python garbage collector article 1" in fake.prompts[0] and QUESTION in fake.prompts[0]
    assert "[1] Python garbage collector article 4" in fake.prompts[1]
    assert not out.notes


@pytest.mark.parametrize("failure", [
    httpx.ConnectError("refused"),
    httpx.Response(500, json={"error": {"message": "boom"}}),
    completion("I cannot help with that."),                   # no JSON
    answer({"irrelevant": "two"}),                            # not a list
    answer({"irrelevant": [1, 7]}),                           # a number we did not send
    answer({"irrelevant": [1, 2, 3]}),                        # most of the batch: not a lenient screen
])
def test_llm_screen_fails_open_per_batch(failure):
    fake = FakeLLM(failure, answer({"irrelevant": [1]}))
    cands = [cand(i) for i in range(1, 9)]
    with fake.client() as client:
        out = coarse_filter(QUESTION, cands, llm=LLM, client=client, batch_size=4)
    # Batch 1 failed and passes whole; batch 2 was screened.
    assert [c.source_id for c in out.kept] == ["s1", "s2", "s3", "s4", "s6", "s7", "s8"]
    assert [d.source_id for d in out.drops] == ["s5"]
    assert len(out.notes) == 1 and out.notes[0].startswith("coarse filter batch 1 passed unscreened")


def test_llm_screen_may_drop_half_a_batch_and_all_of_a_small_one():
    fake = FakeLLM(answer({"irrelevant": [1, 2]}), answer({"irrelevant": [1, 2, 3]}))
    cands = [cand(i) for i in range(1, 8)]
    with fake.client() as client:
        out = coarse_filter(QUESTION, cands, llm=LLM, client=client, batch_size=4)
    assert [d.source_id for d in out.drops] == ["s1", "s2", "s5", "s6", "s7"] and not out.notes


# -- quality filter -------------------------------------------------------------------

LONG = "Python's garbage collector detects reference cycles between container objects. " * 30


def test_quality_filter_honours_max_detail_fetch_and_fetches_only_without_content():
    fetched: list[str] = []

    def fetch(c: Candidate) -> str:
        fetched.append(c.source_id)
        return LONG

    cands = [cand(i, score=1 - i / 100) for i in range(1, 8)]
    cands[0] = cand(1, score=0.99, content_text=LONG)
    out = quality_filter(QUESTION, cands, Policy(max_detail_fetch=4), target=10, fetch=fetch)
    assert fetched == ["s2", "s3", "s4"]                       # s1 had content_text; s5-s7 beyond the cap
    assert {c.source_id for c in out.kept} == {"s1", "s2", "s3", "s4"}
    unreviewed = [d for d in out.drops if "max_detail_fetch" in d.reason]
    assert [d.source_id for d in unreviewed] == ["s5", "s6", "s7"]
    assert all(0.0 <= c.quality <= 1.0 for c in out.kept)


def test_quality_filter_keeps_a_source_whose_fetch_failed_on_its_snippet():
    def fetch(c: Candidate) -> str | None:
        if c.source_id == "s1":
            raise RuntimeError("fetch https://site1.org/page: HTTP 503")
        return None if c.source_id == "s2" else LONG

    cands = [cand(1, snippet="garbage collector and reference cycles"), cand(2, snippet="short"), cand(3)]
    out = quality_filter(QUESTION, cands, Policy(), target=5, fetch=fetch)
    by_id = {c.source_id: c for c in out.kept}
    assert set(by_id) == {"s1", "s2", "s3"} and not out.drops
    assert "HTTP 503" in by_id["s1"].note and "snippet" in by_id["s1"].note
    assert "no text" in by_id["s2"].note
    assert by_id["s3"].note is None and by_id["s3"].quality > by_id["s2"].quality
    assert len(out.notes) == 2


def test_quality_filter_cuts_to_target_dropping_a_body_below_the_bar_first():
    cands = [cand(1, title="Cooking tips", content_text="unrelated words about cooking", score=0.9),
             cand(2, content_text=LONG, score=0.5),
             cand(3, content_text=LONG[:600], score=0.5)]
    out = quality_filter(QUESTION, cands, Policy(), target=2)
    assert [c.source_id for c in out.kept] == ["s2", "s3"]
    assert [(d.source_id, d.stage, d.reason) for d in out.drops] == [("s1", "quality_filter", "beyond target count (2)")]


def test_quality_filter_keeps_the_search_order_among_sources_that_pass_the_bar():
    # s1-s3 pass the bar holding fewer of the question's words than s4, which
    # repeats all of them: s4 scores higher, but the search ranked it last.
    page = "Python frees what reference counting cannot. " + "Other details of the runtime follow. " * 40
    cands = [cand(i, title=f"Memory management {i}", content_text=page, score=0.9 - i / 100) for i in range(1, 4)]
    cands.append(cand(4, content_text=LONG, score=0.8))
    out = quality_filter(QUESTION, cands, Policy(), target=3)
    assert [c.source_id for c in out.kept] == ["s1", "s2", "s3"]
    assert [d.source_id for d in out.drops] == ["s4"]
    assert quality_score(QUESTION, cands[3], LONG) > max(c.quality for c in out.kept) >= QUALITY_BAR


def test_llm_review_drops_low_and_ranks_by_relevance():
    fake = FakeLLM(answer({"reviews": [{"index": 1, "relevance": "low", "reason": "about pizza"},
                                       {"index": 2, "relevance": "medium"},
                                       {"index": 3, "relevance": "high"}]}))
    cands = [cand(i, content_text=LONG, score=0.9 - i / 10) for i in range(1, 4)]
    with fake.client() as client:
        out = quality_filter(QUESTION, cands, Policy(), target=5, llm=LLM, client=client)
    assert [c.source_id for c in out.kept] == ["s3", "s2"]
    assert [c.relevance for c in out.kept] == ["high", "medium"]
    assert out.drops[0].source_id == "s1" and "about pizza" in out.drops[0].reason


def test_llm_review_fails_open_and_can_be_disabled():
    cands = [cand(i, content_text=LONG) for i in range(1, 3)]
    fake = FakeLLM(httpx.ReadTimeout("slow"))
    with fake.client() as client:
        out = quality_filter(QUESTION, cands, Policy(), target=5, llm=LLM, client=client)
    assert len(out.kept) == 2 and not out.drops and "kept unreviewed" in out.notes[0]
    silent = FakeLLM()
    with silent.client() as client:
        off = quality_filter(QUESTION, cands, Policy(enable_llm_review=False), target=5, llm=LLM, client=client)
    assert len(off.kept) == 2 and silent.prompts == []


# -- publishers ---------------------------------------------------------------------------

def test_publishers_group_by_host_and_local_library():
    cands = [cand(i, f"https://www.python.org/doc/{i}", title=f"Doc {i}") for i in range(1, 8)]
    cands += [cand(20, "https://docs.python.org/3/library/gc.html", title="gc"),
              cand(21, "file:///home/me/a.md", title="A"), cand(22, "file:///home/me/b.pdf", title="B")]
    publishers = aggregate_publishers(cands)
    by_name = {p.publisher: p for p in publishers}
    assert [p.publisher for p in publishers] == ["python.org", "local library", "docs.python.org"]
    assert by_name["python.org"].article_count == 7
    assert by_name["python.org"].sample_titles == ["Doc 1", "Doc 2", "Doc 3", "Doc 4", "Doc 5"]
    assert len(by_name["python.org"].source_urls) == 7 and by_name["python.org"].source_ids[0] == "s1"
    assert by_name["local library"].source_urls == ["file:///home/me/a.md", "file:///home/me/b.pdf"]


def test_page_fetcher_reads_pages_and_skips_file_urls(settings):
    from tasks.selection.quality import page_fetcher

    def serve(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "text/html; charset=utf-8"},
                              html="<html><body><article><p>Reference cycles are found by the gc.</p>"
                                   "</article></body></html>")

    with httpx.Client(transport=httpx.MockTransport(serve)) as client:
        fetch = page_fetcher(settings, client, allow_hosts=["docs.example.org"])
        assert "Reference cycles" in fetch(cand(1, "https://docs.example.org/gc"))
        assert fetch(cand(2, "file:///home/me/notes.md")) is None
