"""Consolidation: the reading rules of the cursor, as an analyst sees their result."""

from __future__ import annotations

from datetime import datetime

import pytest

from tasks.lake.consolidation import UnknownTask


def land(lake, inbox, *bundles) -> None:
    for bundle in bundles:
        inbox.write(bundle, f"{bundle.get('task_id', 'none')}/{bundle['query_id']}.json")
    report = lake.ingest(inbox.folder)
    assert not report.refused, [r.line() for r in report.refused]


def test_natural_query_order_decides_which_duplicate_wins(lake, inbox, new_bundle, new_item):
    # Text order would read q10 first; natural order reads q2 first, so q2's
    # occurrence wins even though q10 scores it higher.
    land(lake, inbox,
         new_bundle("q10", [new_item("https://dup.example/", 0.9, title="from q10")]),
         new_bundle("q2", [new_item("https://dup.example/", 0.2, title="from q2")]))
    lake.consolidate()
    (row,) = lake.consolidated()
    assert (row["query_id"], row["title"], row["score_final"]) == ("q2", "from q2", 0.2)
    assert row["query_ids"] == ["q2", "q10"]
    assert row["seen_count"] == 2


def test_the_same_page_under_two_urls_is_one_source(lake, inbox, new_bundle, new_item):
    land(lake, inbox,
         new_bundle("q1", [new_item("https://Example.com/a?utm_source=x", 0.4)]),
         new_bundle("q2", [new_item("https://example.com:443/a#frag", 0.8)]))
    lake.consolidate()
    (row,) = lake.consolidated()
    assert (row["query_id"], row["url"], row["seen_count"]) == ("q1", "https://Example.com/a?utm_source=x", 2)


def test_duplicate_inside_one_bundle_keeps_the_higher_score(lake, inbox, new_bundle, new_item):
    land(lake, inbox, new_bundle("q1", [
        new_item("https://a.example/p", 0.3, title="low"),
        new_item("https://a.example/p?utm_medium=mail", 0.7, title="high"),
        new_item("https://b.example/", 0.5),
    ]))
    lake.consolidate()
    rows = lake.by_url()
    assert rows["https://a.example/p?utm_medium=mail"]["title"] == "high"
    assert rows["https://a.example/p?utm_medium=mail"]["seen_count"] == 2
    assert rows["https://a.example/p?utm_medium=mail"]["query_ids"] == ["q1"]
    assert "https://a.example/p" not in rows


@pytest.mark.parametrize("first, second, winner", [
    (dict(rank=2, title="rank 2"), dict(rank=1, title="rank 1"), "rank 1"),  # equal score: lower rank first
    (dict(title="no rank"), dict(rank=9, title="rank 9"), "rank 9"),  # a missing rank reads last
    (dict(rank=4, title="first in bundle"), dict(rank=4, title="second in bundle"), "first in bundle"),
])
def test_equal_scores_are_broken_by_rank_then_position(lake, inbox, new_bundle, new_item, first, second, winner):
    land(lake, inbox, new_bundle("q1", [new_item("https://a.example/same", 0.5, source_id="s", **first),
                                        new_item("https://a.example/same", 0.5, source_id="s", **second)]))
    lake.consolidate()
    assert [row["title"] for row in lake.consolidated()] == [winner]


def test_failed_items_go_to_the_error_log_and_not_the_output(lake, inbox, new_bundle, new_item):
    land(lake, inbox,
         new_bundle("q1", [new_item("https://ok.example/", 0.4),
                           new_item("https://down.example/", 0.9, status="failed", error_code="timeout",
                                    http_status=504)]),
         new_bundle("q2", [new_item("https://blocked.example/", 0.8, status="failed", error_code="blocked"),
                           new_item("https://ok.example/", 0.6, status="failed", error_code="timeout")]),
         new_bundle("q3", [new_item("https://later.example/", 0.1)]))
    report = lake.consolidate()

    assert report.failed_logged == 3
    assert [row["url"] for row in lake.consolidated()] == ["https://ok.example/", "https://later.example/"]
    # A failed fetch of a page read elsewhere is not one more sighting of it.
    assert lake.by_url()["https://ok.example/"]["seen_count"] == 1
    errors = lake.rows("SELECT task_id, query_id, url, error_code, http_status, stage FROM error_log "
                       "ORDER BY query_id, url")
    assert errors == [
        ("t1", "q1", "https://down.example/", "timeout", 504, "consolidate"),
        ("t1", "q2", "https://blocked.example/", "blocked", None, "consolidate"),
        ("t1", "q2", "https://ok.example/", "timeout", None, "consolidate"),
    ]


def test_filtered_items_are_skipped(lake, inbox, new_bundle, new_item):
    land(lake, inbox,
         new_bundle("q1", [new_item("https://kept.example/", 0.2),
                           new_item("https://spam.example/", 0.9, status="filtered")]),
         new_bundle("q2", [new_item("https://kept.example/", 0.3, status="filtered")]))
    report = lake.consolidate()
    assert report.items_read == 1
    (row,) = lake.consolidated()
    assert (row["url"], row["seen_count"], row["query_ids"]) == ("https://kept.example/", 1, ["q1"])
    assert lake.count("error_log") == 0


def test_seen_count_and_query_ids_follow_reading_order(lake, inbox, new_bundle, new_item):
    land(lake, inbox,
         new_bundle("q3", [new_item("https://x.example/", 0.5)]),
         new_bundle("q11", [new_item("https://x.example/", 0.5)]),
         new_bundle("q1", [new_item("https://x.example/", 0.5), new_item("https://y.example/", 0.6)]),
         new_bundle("q2", [new_item("https://y.example/", 0.6)]))
    lake.consolidate()
    rows = lake.by_url()
    assert (rows["https://x.example/"]["seen_count"], rows["https://x.example/"]["query_ids"]) == (
        3, ["q1", "q3", "q11"])
    assert (rows["https://y.example/"]["seen_count"], rows["https://y.example/"]["query_ids"]) == (
        2, ["q1", "q2"])


def test_final_rank_orders_every_source_by_score(lake, inbox, new_bundle, new_item):
    land(lake, inbox,
         new_bundle("q1", [new_item("https://a.example/", 0.2, source_id="a"),
                           new_item("https://b.example/", 0.9, source_id="b")]),
         new_bundle("q2", [new_item("https://c.example/", 0.5, source_id="c"),
                           new_item("https://d.example/", 0.5, source_id="d")]),
         new_bundle("q3", [new_item("https://e.example/", 1.0, source_id="e")]))
    lake.consolidate()
    ranked = [(row["final_rank"], row["source_id"]) for row in lake.consolidated()]
    # Equal scores are ordered by source_id, so the ranking is stable across runs.
    assert ranked == [(1, "e"), (2, "b"), (3, "c"), (4, "d"), (5, "a")]


def test_equal_scores_keep_the_order_the_provider_gave(lake, inbox, new_bundle, new_item):
    """A source id is a hash of the URL: ordering ties by it alone would
    swap two equally scored files when their folder moves."""
    land(lake, inbox, new_bundle("q1", [new_item("https://a.example/", 0.5, source_id="z", rank=1),
                                        new_item("https://b.example/", 0.5, source_id="a", rank=2),
                                        new_item("https://c.example/", 0.5, source_id="m")]))
    lake.consolidate()
    assert [row["source_id"] for row in lake.consolidated()] == ["z", "a", "m"]  # no rank reads last
    land(lake, inbox, new_bundle("q2", [new_item("https://d.example/", 0.5, source_id="b", rank=3)]))
    lake.consolidate()  # a later bundle's tie is ranked among the earlier output the same way
    assert [row["source_id"] for row in lake.consolidated()] == ["z", "a", "b", "m"]


def test_the_cursor_describes_what_was_read(lake, inbox, new_bundle, new_item):
    land(lake, inbox,
         new_bundle("q2", [new_item("https://a.example/", 0.9, source_id="a"),
                           new_item("https://b.example/", 0.1, source_id="b")]),
         new_bundle("q10", [new_item("https://c.example/", 0.8, source_id="c"),
                            new_item("https://e.example/", 0.3, source_id="e"),
                            new_item("https://d.example/", 0.3, source_id="d"),
                            new_item("https://a.example/", 0.95, source_id="a")]))
    before = datetime.now().astimezone()
    report = lake.consolidate()
    cursor = lake.cursor()

    # Last item read: the last query in natural order, its lowest score,
    # and among equal scores the greatest source_id.
    assert (cursor["task_id"], cursor["last_query_id"], cursor["last_source_id"]) == ("t1", "q10", "e")
    assert cursor["consumed_count"] == len(lake.consolidated()) == report.sources_written == 5
    assert cursor["updated_at"] >= before.replace(microsecond=0)
    assert (report.last_query_id, report.last_source_id) == ("q10", "e")


def test_a_late_bundle_sorting_before_the_cursor_is_read_by_the_next_run(lake, inbox, new_bundle, new_item):
    land(lake, inbox,
         new_bundle("q2", [new_item("https://old.example/", 0.5, title="read first")]),
         new_bundle("q3", [new_item("https://other.example/", 0.4)]))
    lake.consolidate()
    assert lake.cursor()["last_query_id"] == "q3"

    land(lake, inbox, new_bundle("q1", [new_item("https://old.example/", 0.99, title="late"),
                                        new_item("https://new.example/", 0.7),
                                        new_item("https://bad.example/", 0.7, status="failed", error_code="x")]))
    report = lake.consolidate()

    assert (report.bundles_read, report.new_sources, report.failed_logged) == (1, 1, 1)
    rows = lake.by_url()
    assert set(rows) == {"https://old.example/", "https://other.example/", "https://new.example/"}
    # The source already published keeps its winner but counts the new sighting.
    old = rows["https://old.example/"]
    assert (old["title"], old["query_id"], old["score_final"], old["seen_count"]) == ("read first", "q2", 0.5, 2)
    assert sorted(old["query_ids"]) == ["q1", "q2"]
    assert rows["https://new.example/"]["query_id"] == "q1"
    assert [row["final_rank"] for row in lake.consolidated()] == [1, 2, 3]
    assert lake.cursor()["consumed_count"] == 3
    assert lake.rows("SELECT url FROM error_log") == [("https://bad.example/",)]


def test_consolidating_with_nothing_new_changes_nothing(lake, inbox, new_bundle, new_item):
    land(lake, inbox, new_bundle("q1", [new_item("https://a.example/", 0.5),
                                        new_item("https://f.example/", 0.5, status="failed", error_code="x")]))
    lake.consolidate()
    cursor, files = lake.cursor(), lake.files()
    errors = lake.rows("SELECT * FROM error_log")

    report = lake.consolidate()

    assert report.nothing_new and report.sources_written == 1
    assert report.line() == "t1: nothing new; 1 sources"
    assert lake.cursor() == cursor  # updated_at included: nothing was written
    assert lake.files() == files
    assert lake.rows("SELECT * FROM error_log") == errors


def test_reading_in_two_runs_equals_reading_once(lake, inbox, new_bundle, new_item, separate_lake):
    bundles = [new_bundle(f"q{n}", [new_item(f"https://s.example/{(n * i) % 7}", round(0.05 * (n + i) % 1, 2))
                                    for i in range(6)]) for n in range(1, 7)]
    land(lake, inbox, *bundles[:3])
    lake.consolidate()
    land(lake, inbox, *bundles[3:])
    lake.consolidate()

    once, once_inbox = separate_lake("once")
    land(once, once_inbox, *bundles)
    once.consolidate()
    assert lake.consolidated() == once.consolidated()


def test_rebuild_reads_everything_again_without_doubling_errors(lake, inbox, new_bundle, new_item):
    land(lake, inbox, new_bundle("q1", [new_item("https://a.example/", 0.5),
                                        new_item("https://f.example/", 0.5, status="failed", error_code="x")]))
    lake.consolidate()
    output = lake.consolidated()
    report = lake.consolidate(rebuild=True)
    assert report.rebuilt and report.bundles_read == 1
    assert lake.consolidated() == output
    assert lake.count("error_log") == 1


def test_tasks_are_consolidated_separately(lake, inbox, new_bundle, new_item):
    land(lake, inbox, new_bundle("q1", [new_item("https://a.example/", 0.5)], task_id="alpha"),
         new_bundle("q1", [new_item("https://a.example/", 0.5), new_item("https://b.example/", 0.4)],
                    task_id="beta"))
    lake.consolidate("alpha")
    assert [row["url"] for row in lake.consolidated("alpha")] == ["https://a.example/"]
    assert lake.consolidated("beta") == [] and lake.cursor("beta") is None
    lake.consolidate("beta")
    assert len(lake.consolidated("beta")) == 2
    assert lake.consolidated("alpha")[0]["seen_count"] == 1


def test_an_unknown_task_is_an_error(lake, inbox, new_bundle, new_item):
    land(lake, inbox, new_bundle("q1", [new_item("https://a.example/")]))
    with pytest.raises(UnknownTask, match="'nope'"):
        lake.consolidate("nope")


def test_the_cursor_row_is_a_search_read_cursor(lake, inbox, new_bundle, new_item):
    from schemas.bundle import SearchReadCursor
    land(lake, inbox, new_bundle("q1", [new_item("https://a.example/", 0.9, source_id="a")]))
    lake.consolidate()
    cursor = SearchReadCursor.model_validate(lake.cursor())
    assert (cursor.task_id, cursor.last_query_id, cursor.last_source_id, cursor.consumed_count) == ("t1", "q1", "a", 1)
    assert cursor.updated_at.utcoffset().total_seconds() == 0
