"""What a watch round records as changed, computed in SQL from the rounds'
kept sources and answers (no Prefect: rounds are driven here the way
flows/watch.py drives them, bundles landed with `ingest`). Analysts read it
through the `changes` view, the topic's page shows it, and the words say it."""

from __future__ import annotations

import httpx
import pytest

from schemas.watch import Change, Watch
from tasks.lake.catalog import open_catalog
from tasks.lake.watches import add_watch, begin_round, end_round
from tasks.reporting.changes import change_line, changes_markdown, summary

WATCH = Watch(name="notes", question="How do the notes change?", interval_seconds=3600)


def item(new_item, name: str, score: float, text: str) -> dict:
    return new_item(f"https://{name}.example/", score, source_id=f"s-{name}", title=f"page {name}", content_text=text)


def answer(name: str, insight: str, quote: str) -> list:
    return ["insight", 0, insight, f"s-{name}", f"https://{name}.example/", f"page {name}", quote, True]


@pytest.fixture
def rounds(lake, inbox, new_bundle, settings):
    """Run round `number` of WATCH: its bundle lands, is consolidated, and
    the round ends with `answers` as its report's quotes."""
    with open_catalog(settings, "test: watch add") as catalog:
        add_watch(catalog, WATCH, None)

    def run(number: int, items: list[dict], answers: list[list]) -> tuple[int | None, list[Change]]:
        with open_catalog(settings, "test: begin round") as catalog:
            assert begin_round(catalog, WATCH, f"run-{number}") == number
        lake.ingest(inbox.write(new_bundle(f"r{number}.q1", items, task_id=WATCH.topic), f"r{number}.json"))
        lake.consolidate(WATCH.topic)
        with open_catalog(settings, "test: end round") as catalog:
            return end_round(catalog, WATCH.topic, number, answers)
    return run


def second_round(rounds, new_item) -> list[Change]:
    rounds(1, [item(new_item, "a", 0.9, "a"), item(new_item, "b", 0.8, "b"), item(new_item, "c", 0.7, "c one")],
           [answer("a", "A is good", "a")])
    previous, changes = rounds(2, [item(new_item, "b", 0.95, "b"), item(new_item, "d", 0.85, "d"),
                                   item(new_item, "c", 0.7, "c two")], [answer("b", "B is better", "b")])
    assert previous == 1
    return changes


def test_a_round_records_sources_ranks_content_and_answer_changes(rounds, new_item):
    changes = second_round(rounds, new_item)
    assert [(c.kind, c.url, c.old_rank, c.new_rank, c.detail) for c in changes] == [
        ("source_added", "https://d.example/", None, 2, None),
        ("source_dropped", "https://a.example/", 1, None, None),
        ("source_moved", "https://b.example/", 2, 1, "up 1"),
        ("content_changed", "https://c.example/", 3, 3, changes[3].detail),
        ("insight_added", "https://b.example/", None, None, "B is better"),
        ("insight_removed", "https://a.example/", None, None, "A is good"),
        ("quote_added", "https://b.example/", None, None, "b"),
        ("quote_removed", "https://a.example/", None, None, "a"),
    ]
    assert changes[3].detail.startswith("content hash ")
    assert summary(changes, 2, 1) == ("Round 2, since round 1: 1 new source, 1 dropped, 1 moved in rank, "
                                      "1 with changed content; the answer now cites “page b”; no longer cites "
                                      "“page a”; 1 insight added, 1 removed.")
    # a watch asked in Chinese is told in Chinese
    assert summary(changes, 2, 1, language="zh") == ("第 2 轮，自第 1 轮以来：1 个新来源，1 个被移除，1 个排名变化，"
                                                     "1 个内容有变化；答案现在引用 “page b”，不再引用 “page a”，"
                                                     "新增 1 条结论，移除 1 条。")
    assert [change_line(c, "zh") for c in changes[:3]] == [
        "新增来源 #2 page d", "移除来源 #1 page a", "排名变化 #2→#1 page b"]
    assert changes_markdown("…", changes, language="zh")[0] == "## 变化"


def test_a_round_like_the_one_before_records_only_an_unchanged_answer(rounds, new_item, lake):
    same = [item(new_item, "a", 0.9, "a"), item(new_item, "b", 0.8, "b")]
    assert rounds(1, same, [answer("a", "A is good", "a")]) == (None, [])  # a first round compares with nothing
    previous, changes = rounds(2, same, [answer("a", "A is good", "a")])
    assert (previous, changes) == (1, [Change("answer_unchanged")])
    assert summary(changes, 2, 1) == ("Round 2: nothing changed since round 1 — the same sources in the same "
                                      "order with the same content, and the same answer.")
    assert summary(changes, 2, 1, language="zh") == "第 2 轮：自第 1 轮以来没有变化——来源、顺序和内容都相同，答案也相同。"
    assert summary([], 1, None, 3, 2, language="zh") == "第 1 轮是这个监视的第一轮：3 个来源，2 条结论；之后每一轮会说明有什么变化。"
    # both rounds' bundles stay in the topic; `consolidated` holds the latest round's sources
    assert lake.count("bundles") == 2 and len(lake.consolidated(WATCH.topic)) == 2


def test_analysts_read_the_changes_view_and_the_page_shows_it(rounds, new_item, cli, settings):
    second_round(rounds, new_item)
    read = cli.run("sql", "select topic, round, kind, old_rank, new_rank from changes where kind like 'source%' "
                          "order by kind", "--format", "csv")
    assert read.returncode == 0, read.stderr
    assert read.stdout.splitlines() == ["topic,round,kind,old_rank,new_rank", "watch-notes,2,source_added,,2",
                                        "watch-notes,2,source_dropped,1,", "watch-notes,2,source_moved,2,1"]
    watches = cli.run("sql", "select name, topic from watches", "--format", "csv")
    assert watches.stdout.splitlines() == ["name,topic", "notes,watch-notes"]

    from flows.launcher import ResearchLauncher
    from tasks.server.serve import make_server
    with make_server(settings, "127.0.0.1", 0, ResearchLauncher(settings)) as server:
        page = httpx.get(f"{server.url}/tasks/{WATCH.topic}", timeout=30)
    assert page.status_code == 200
    assert 'id="changes"' in page.text and "source dropped" in page.text and "page d" in page.text
