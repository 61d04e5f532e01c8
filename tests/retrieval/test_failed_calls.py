"""A failed search call or page fetch says why in the error log's `message`
(its `title` names the call, its `error_code` classifies it)."""

from __future__ import annotations

from schemas.errors import RemoteError
from tasks.common.http import make_client
from tasks.lake.catalog import open_catalog
from tasks.lake.landing import land_bundles
from tasks.retrieval.providers.base import Hit, Query
from tasks.retrieval.search import SearchCall, add_page_text, search_bundle


class Refusing:
    name = "refusing"
    endpoint = "https://search.example/api"

    def __init__(self, hits: list[Hit] | None = None):
        self.hits = hits

    def search(self, query, max_results):
        if self.hits is None:
            raise RemoteError("http_429", "GET https://search.example/api: HTTP 429 Too Many Requests",
                              http_status=429)
        return self.hits


def land_and_consolidate(settings, lake, bundle) -> list[dict]:
    with open_catalog(settings, "test-land") as catalog:
        land_bundles(catalog, [bundle], source="test")
    lake.consolidate("t1")
    return lake.dicts("SELECT url, title, error_code, http_status, message FROM error_log")


def test_a_failed_search_call_carries_its_reason_into_the_error_log(settings, lake):
    call = SearchCall("refusing", Query("q1.refusing", "anything", "web"))
    bundle = search_bundle(Refusing(), call, task_id="t1", max_results=5, settings=settings)
    [logged] = land_and_consolidate(settings, lake, bundle)
    assert logged == {"url": "https://search.example/api",
                      "title": "refusing search failed: GET https://search.example/api: HTTP 429 Too Many Requests",
                      "error_code": "http_429", "http_status": 429,
                      "message": "GET https://search.example/api: HTTP 429 Too Many Requests"}


def test_a_failed_page_fetch_carries_its_reason_into_the_error_log(settings, lake):
    call = SearchCall("refusing", Query("q1.refusing", "anything", "web"))
    # the fetcher never reads a loopback address: a failure without any network
    hit = Hit(url="http://127.0.0.1:9/page", title="A page", snippet="only a snippet")
    bundle = search_bundle(Refusing([hit]), call, task_id="t1", max_results=5, settings=settings)
    with make_client(settings) as client:
        add_page_text(bundle, settings, client)
    [logged] = land_and_consolidate(settings, lake, bundle)
    assert (logged["url"], logged["title"], logged["error_code"]) == ("http://127.0.0.1:9/page", "A page", "blocked")
    assert logged["message"].startswith("fetch refused: 127.0.0.1 resolves to loopback address")
    assert lake.rows("SELECT url FROM consolidated") == [("http://127.0.0.1:9/page",)]  # the result is kept


def test_an_ingested_bundle_may_say_why_an_item_failed(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/", status="failed", error_code="timeout",
                                           error_message="no answer within 30 s"),
                                  new_item("https://b.example/", status="failed", error_code="blocked")]))
    assert not lake.ingest(inbox.folder).refused
    lake.consolidate()
    assert lake.rows("SELECT url, message FROM error_log ORDER BY url") == [
        ("https://a.example/", "no answer within 30 s"), ("https://b.example/", None)]


def test_an_error_message_past_its_limit_refuses_the_bundle(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/", status="failed", error_code="timeout",
                                           error_message="x" * 2001)]))
    [refusal] = lake.ingest(inbox.folder).refused
    assert (refusal.reason, refusal.field) == ("too_long", "results[0].error_message")


def test_a_lake_made_before_results_kept_the_reason_gains_the_column(settings, lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/", status="failed", error_code="timeout")]))
    lake.ingest(inbox.folder)
    with open_catalog(settings) as catalog:  # as such a lake was: no column, an older schema fingerprint
        catalog.con.execute("ALTER TABLE results DROP COLUMN error_message")
        catalog.con.execute("UPDATE searchlake_schema SET fingerprint = 'older'")
    inbox.write(new_bundle("q2", [new_item("https://b.example/", status="failed", error_code="timeout",
                                           error_message="no answer within 30 s")]))
    lake.ingest(inbox.folder)
    lake.consolidate()
    assert lake.rows("SELECT url, message FROM error_log ORDER BY url") == [
        ("https://a.example/", None), ("https://b.example/", "no answer within 30 s")]
