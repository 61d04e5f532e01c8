"""Landing: bundle files enter the lake whole or go to quarantine with a reason."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timezone

import pytest

from schemas.rows import RESULTS
from schemas.urls import source_id_for
from tasks.lake.catalog import open_catalog
from tasks.lake.compaction import compact


def three_bundles(inbox, new_bundle, new_item):
    for n in (1, 2, 3):
        inbox.write(new_bundle(f"q{n}", [new_item(f"https://site.example/{n}/{i}", 0.1 * i) for i in range(4)]))


def catalog_counts(lake) -> dict[str, int]:
    views = ["bundles", "results", "consolidated", "search_read_cursor", "error_log", "quarantine"]
    return {view: lake.count(view) for view in views}


def test_a_folder_lands_as_one_transaction(lake, inbox, new_bundle, new_item):
    three_bundles(inbox, new_bundle, new_item)
    report = lake.ingest(inbox.folder)

    assert sorted(query for _, query, _ in report.landed) == ["q1", "q2", "q3"]
    assert report.items_landed == 12 and not report.refused
    assert lake.rows("SELECT query_id, item_count, total_returned FROM bundles ORDER BY query_id") == [
        ("q1", 4, 4), ("q2", 4, 4), ("q3", 4, 4)]
    assert lake.count("results") == 12
    # One commit: one snapshot holds the three bundles; one raw JSON per bundle, no stray files.
    assert lake.rows("SELECT count(DISTINCT landing_seq) FROM bundles") == [(1,)]
    assert len(lake.files_under("raw/task_id=t1/")) == 3
    assert lake.orphan_table_files() == []


def test_results_rows_carry_the_bundle_and_item_fields(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q7", [new_item("https://a.example/x?utm_source=z", 0.7, rank=3, snippet="s")],
                           query_intent="market", executed_at="2026-03-01T13:00:00+01:00"))
    lake.ingest(inbox.folder)
    row = lake.dicts("SELECT * FROM results")[0]
    assert (row["task_id"], row["query_id"], row["query_intent"], row["rank"], row["snippet"]) == (
        "t1", "q7", "market", 3, "s")
    assert row["url"] == "https://a.example/x?utm_source=z"
    assert row["executed_at"] == datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    assert row["status"] == "ok" and row["score_final"] == 0.7


def test_landed_values_follow_the_contract(lake, inbox, new_bundle, new_item):
    # Landing may take a faster route than the pydantic models; what lands must
    # be what the models say: UTC instants, derived source_ids, stats counted.
    inbox.write(new_bundle("q1", [
        new_item("https://A.example/p?utm_source=x&b=2&a=1", captured_at="2026-03-01T12:00:00+02:00",
                 published_at="2026-03-01T12:00:00"),
        new_item("https://b.example/", source_id="given-id", status="failed", error_code="timeout"),
        new_item("file:///srv/doc.pdf", status="filtered"),
    ], executed_at="2026-03-01T09:30:00-03:00"))
    lake.ingest(inbox.folder, libraries=["/srv"])

    rows = lake.dicts("SELECT * FROM results ORDER BY item_index")
    utc = timezone.utc
    assert rows[0]["captured_at"] == datetime(2026, 3, 1, 10, tzinfo=utc)
    assert rows[0]["published_at"] == datetime(2026, 3, 1, 12, tzinfo=utc)
    assert rows[0]["executed_at"] == datetime(2026, 3, 1, 12, 30, tzinfo=utc)
    assert [r["source_id"] for r in rows] == [source_id_for("https://a.example/p?a=1&b=2"), "given-id",
                                              source_id_for("file:///srv/doc.pdf")]
    assert lake.rows("SELECT total_returned, kept_after_filter, failed_count, executed_at FROM bundles") == [
        (3, 1, 1, datetime(2026, 3, 1, 12, 30, tzinfo=utc))]


@pytest.mark.parametrize("field, value", [("query_id", "../x"), ("task_id", "a/b"),
                                          ("executed_at", "1772366400"), ("executed_at", 1772366400),
                                          ("provider", "")])
def test_a_bundle_breaking_the_contract_is_refused_at_landing(lake, inbox, new_bundle, new_item, field, value):
    doc = new_bundle("q1", [new_item("https://a.example/")])
    doc[field] = value
    refused = lake.ingest(inbox.write(doc, "bad.json")).refused
    assert [(r.reason, r.field) for r in refused] == [("invalid_value", field)]
    assert lake.count("bundles") == 0


BAD_FILES = [
    # (file text, reason, field, item_index)
    ("this is not json", "not_json", None, None),
    ('{"task_id": "t1", "query_id": "q9", "results": [', "truncated", None, None),
    (json.dumps({"task_id": "t1", "query_id": "q9", "provider": "x",
                 "executed_at": "2026-03-01T00:00:00Z", "results": []}), "missing_field", "query_text", None),
]


def bad_item_bundle(new_bundle, new_item, index: int, **bad) -> str:
    items = [new_item(f"https://ok.example/{i}") for i in range(4)]
    items[index].update(bad)
    for name in [k for k, v in bad.items() if v is None]:
        del items[index][name]
    return json.dumps(new_bundle("q9", items))


@pytest.mark.parametrize("case", ["not_json", "truncated", "missing_field", "score", "error_code",
                                  "unsafe_url", "missing_item_field", "number_timestamp"])
def test_a_bad_file_is_quarantined_with_reason_field_and_item_index(lake, inbox, new_bundle, new_item, case):
    item_cases = {
        "score": (dict(score_final=1.5), "invalid_value", "results[1].score_final", 1),
        "error_code": (dict(status="failed"), "invalid_value", "results[2].error_code", 2),
        "unsafe_url": (dict(url="javascript:void(0)"), "unsafe_url", "results[3].url", 3),
        "missing_item_field": (dict(captured_at=None), "missing_field", "results[0].captured_at", 0),
        "number_timestamp": (dict(captured_at="1772366400"), "invalid_value", "results[2].captured_at", 2),
    }
    if case in item_cases:
        bad, reason, field, index = item_cases[case]
        text = bad_item_bundle(new_bundle, new_item, index, **bad)
    else:
        text, reason, field, index = next(c for c in BAD_FILES if c[1] == case)
    three_bundles(inbox, new_bundle, new_item)
    bad_path = inbox.write_text(text, "bad.json")

    report = lake.ingest(inbox.folder)

    assert [(r.source, r.reason, r.field, r.item_index) for r in report.refused] == [
        (str(bad_path), reason, field, index)]
    row = lake.dicts("SELECT * FROM quarantine")[0]
    assert (row["source_path"], row["reason"], row["field"], row["item_index"]) == (
        str(bad_path), reason, field, index)
    assert (lake.root / row["stored_path"]).read_text() == text  # the file is kept for inspection
    # The good files of the same folder still land; nothing of the bad one does.
    assert lake.rows("SELECT list(query_id ORDER BY query_id) FROM bundles")[0][0] == ["q1", "q2", "q3"]
    assert lake.count("results") == 12


def test_every_error_of_a_refused_bundle_is_listed(lake, inbox, new_bundle, new_item):
    items = [new_item("https://a.example/0", score_final=2), new_item("https://a.example/1", status="failed")]
    inbox.write(new_bundle("q1", items))
    lake.ingest(inbox.folder)
    (errors,) = lake.rows("SELECT errors FROM quarantine")[0]
    assert [e["field"] for e in json.loads(errors)] == ["results[0].score_final", "results[1].error_code"]


def test_a_bundle_without_task_needs_the_task_id_option(lake, inbox, new_bundle, new_item):
    path = inbox.write(new_bundle("q1", [new_item("https://a.example/")], task_id=None))

    refused = lake.ingest(path).refused
    assert [(r.reason, r.field, r.query_id) for r in refused] == [("missing_task", "task_id", "q1")]
    assert lake.count("bundles") == 0

    assert not lake.ingest(path, task_id="given").refused
    assert lake.rows("SELECT task_id, query_id FROM bundles") == [("given", "q1")]


def test_the_task_id_option_applies_only_to_bundles_naming_none(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/1")], task_id="named"))
    inbox.write(new_bundle("q2", [new_item("https://a.example/2")], task_id=None))
    lake.ingest(inbox.folder, task_id="default")
    assert lake.rows("SELECT task_id, query_id FROM bundles ORDER BY query_id") == [
        ("named", "q1"), ("default", "q2")]
    assert lake.rows("SELECT DISTINCT task_id FROM results ORDER BY 1") == [("default",), ("named",)]


def test_a_missing_path_is_reported_not_found(lake, tmp_path):
    report = lake.ingest(tmp_path / "nowhere")
    assert [(r.reason, r.source) for r in report.refused] == [("not_found", str(tmp_path / "nowhere"))]


def test_ingesting_the_same_files_again_changes_nothing(lake, inbox, new_bundle, new_item):
    three_bundles(inbox, new_bundle, new_item)
    lake.ingest(inbox.folder)
    lake.consolidate()
    counts, files = catalog_counts(lake), lake.files()
    landed_at = lake.rows("SELECT list(landed_at ORDER BY query_id) FROM bundles")[0][0]

    report = lake.ingest(inbox.folder)

    assert (len(report.landed), len(report.unchanged), len(report.refused)) == (0, 3, 0)
    assert catalog_counts(lake) == counts
    assert lake.files() == files
    assert lake.rows("SELECT list(landed_at ORDER BY query_id) FROM bundles")[0][0] == landed_at
    assert lake.consolidate().nothing_new


def test_the_same_file_twice_in_one_batch_lands_once(lake, inbox, new_bundle, new_item):
    doc = new_bundle("q1", [new_item("https://a.example/")])
    inbox.write(doc, "a.json")
    inbox.write(doc, "copy/a.json")
    report = lake.ingest(inbox.folder)
    assert (len(report.landed), len(report.unchanged)) == (1, 1)
    assert lake.count("results") == 1


def test_a_different_bundle_under_the_same_ids_is_refused(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://old.example/")]))
    lake.ingest(inbox.folder)
    files = lake.files()
    changed = inbox.write(new_bundle("q1", [new_item("https://new.example/")]), "later/q1.json")

    refused = lake.ingest(changed).refused

    assert [(r.reason, r.field, r.task_id, r.query_id) for r in refused] == [("conflict", "query_id", "t1", "q1")]
    assert lake.rows("SELECT url FROM results") == [("https://old.example/",)]
    assert set(files) <= set(lake.files())  # only the quarantined copy is new


def test_two_different_bundles_with_the_same_ids_in_one_batch_conflict(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://one.example/")]), "a.json")
    inbox.write(new_bundle("q1", [new_item("https://two.example/")]), "b.json")
    report = lake.ingest(inbox.folder)
    assert [r.reason for r in report.refused] == ["conflict"]
    assert lake.rows("SELECT url FROM results") == [("https://one.example/",)]


def test_replace_swaps_the_bundle_and_the_next_consolidate_rebuilds(lake, inbox, new_bundle, new_item):
    three_bundles(inbox, new_bundle, new_item)
    inbox.write(new_bundle("q2", [new_item("https://old.example/", 0.9, status="failed", error_code="timeout")]))
    lake.ingest(inbox.folder)
    lake.consolidate()
    old_raw = lake.files_under("raw/task_id=t1/query_id=q2/")
    assert lake.count("error_log") == 1

    newer = inbox.write(new_bundle("q2", [new_item("https://new.example/", 0.99)]), "newer/q2.json")
    report = lake.ingest(newer, replace=True)
    consolidation = lake.consolidate()

    assert report.replaced == [("t1", "q2")] and not report.refused
    assert consolidation.rebuilt
    assert lake.rows("SELECT url FROM results WHERE query_id = 'q2'") == [("https://new.example/",)]
    assert lake.count("results") == 4 + 4 + 1
    assert lake.count("bundles") == 3
    urls = [row["url"] for row in lake.consolidated()]
    assert urls[0] == "https://new.example/"
    assert not any(u.startswith("https://site.example/2/") for u in urls)
    assert lake.count("error_log") == 0  # the replaced bundle's failure is gone too
    new_raw = lake.files_under("raw/task_id=t1/query_id=q2/")
    assert len(new_raw) == 1 and new_raw != old_raw
    assert lake.cursor()["consumed_count"] == len(urls) == 9


def test_compaction_keeps_every_row_and_the_views_still_answer(lake, inbox, new_bundle, new_item):
    for n in range(1, 5):  # one ingest per bundle: four small landings
        lake.ingest(inbox.write(new_bundle(f"q{n}", [new_item(f"https://a.example/{n % 2}/{i}", 0.02 * i)
                                                     for i in range(40)])))
        if n == 2:
            lake.consolidate()
    lake.consolidate()
    every_row = lake.rows("SELECT * FROM results ORDER BY query_id, item_index")
    consolidated = lake.consolidated()
    bundles = lake.rows("SELECT * FROM bundles ORDER BY query_id")

    results_files = "SELECT count(*) FROM ducklake_list_files('lake', 'results')"
    assert lake.rows(results_files) == [(4,)]

    files_before = lake.rows("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file "
                             "WHERE end_snapshot IS NULL")[0][0]
    with open_catalog(lake.settings, "test-compact") as catalog:
        lines = compact(catalog, keep_days=0)

    assert lake.rows(results_files) == [(1,)]
    # what it did, in numbers: the four results files (and the other tables' small files) merged
    merged, made = map(int, re.fullmatch(r"small table files merged: (\d+) into (\d+); rewritten without their "
                                         r"deleted rows: \d+", lines[1]).groups())
    assert merged >= 4 and 1 <= made < merged
    files_after = lake.rows("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file "
                            "WHERE end_snapshot IS NULL")[0][0]
    assert lines[2] == f"table files the lake reads: {files_after} (were {files_before})"
    assert lake.rows("SELECT * FROM results ORDER BY query_id, item_index") == every_row
    assert lake.rows("SELECT * FROM bundles ORDER BY query_id") == bundles
    assert lake.consolidated() == consolidated
    assert lake.consolidate().nothing_new
    lake.consolidate(rebuild=True)
    assert lake.consolidated() == consolidated
    # Landing and reading go on as before after a compaction.
    lake.ingest(inbox.write(new_bundle("q5", [new_item("https://a.example/new", 0.95)])))
    assert lake.consolidate().bundles_read == 1
    assert lake.consolidated()[0]["url"] == "https://a.example/new"


def test_compaction_deletes_raw_files_no_bundle_names_once_they_are_old(lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1")])))
    [kept] = lake.files_under("raw/")
    old_stray = lake.root / "raw" / "task_id=t1" / "query_id=q9" / "killed-before-commit.json"
    new_stray = lake.root / "raw" / "task_id=t1" / "query_id=q8" / "in-flight.json"
    for stray in (old_stray, new_stray):
        stray.parent.mkdir(parents=True)
        stray.write_text("{}")
    two_hours_ago = time.time() - 7200
    os.utime(old_stray, (two_hours_ago, two_hours_ago))

    with open_catalog(lake.settings, "test-compact") as catalog:
        lines = compact(catalog, keep_days=7)

    assert lines[-1] == "raw, quarantine and report files no row names, over an hour old, deleted: 1"
    assert sorted(lake.files_under("raw/")) == sorted([kept, "raw/task_id=t1/query_id=q8/in-flight.json"])


def test_the_results_table_has_the_columns_landing_writes(lake):
    described = lake.rows("SELECT column_name FROM (DESCRIBE results)")
    assert [name for (name,) in described] == RESULTS.names
