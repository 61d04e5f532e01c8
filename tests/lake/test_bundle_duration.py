"""Each search call's duration lands with its bundle: `stats.duration_ms` of
a bundle becomes `bundles.duration_ms`, by both validation paths, so latency
per provider is one SQL query away."""

from __future__ import annotations

import pytest

from schemas.errors import RemoteError
from tasks.retrieval.providers.base import Hit, Query
from tasks.retrieval.search import SearchCall, search_bundle


def test_a_bundles_duration_lands_in_the_bundles_view(lake, inbox, new_bundle, new_item):
    fast = new_bundle("q1", [new_item("https://a.example/1")], stats={
        "total_returned": 1, "kept_after_filter": 1, "failed_count": 0, "dedup_count": 0, "duration_ms": 1234})
    # an item with an extra field takes full validation instead of the fast path
    slow = new_bundle("q2", [new_item("https://a.example/2", extra_field=1)], stats={"duration_ms": 56})
    silent = new_bundle("q3", [new_item("https://a.example/3")])
    for bundle in (fast, slow, silent):
        inbox.write(bundle)
    report = lake.ingest(inbox.folder)
    assert not report.refused
    rows = lake.rows("SELECT query_id, duration_ms FROM bundles ORDER BY query_id")
    assert rows == [("q1", 1234), ("q2", 56), ("q3", None)]


@pytest.mark.parametrize("bad", [-1, 1.5, "fast"])
def test_a_duration_that_is_not_a_count_of_milliseconds_refuses_the_bundle(lake, inbox, new_bundle, new_item, bad):
    inbox.write(new_bundle("q1", [new_item("https://a.example/1")], stats={"duration_ms": bad}))
    report = lake.ingest(inbox.folder)
    assert [r.field for r in report.refused] == ["stats.duration_ms"]


class Clocked:
    name = "clocked"
    endpoint = "https://search.example/api"

    def __init__(self, fail: bool = False):
        self.fail = fail

    def search(self, query, max_results):
        import time
        time.sleep(0.05)
        if self.fail:
            raise RemoteError("timeout", "no answer in time")
        return [Hit(url="https://a.example/1", title="one", snippet="one")]


@pytest.mark.parametrize("fail", [False, True], ids=["answered", "failed"])
def test_a_search_call_records_how_long_it_took(settings, fail):
    call = SearchCall("clocked", Query("q1.clocked", "one", "web"))
    bundle = search_bundle(Clocked(fail), call, task_id="t1", max_results=5, settings=settings)
    assert bundle.stats.duration_ms >= 50
