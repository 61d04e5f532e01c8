"""The bundle contract: what an agent may hand us, and what it is refused."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

import jsonschema
import pytest
from pydantic import ValidationError

from schemas.bundle import SearchResultBundle, SearchResultItem
from schemas.urls import UnsafeURL, normalize_url, source_id_for

BUNDLE_REQUIRED = ["query_id", "query_text", "provider", "executed_at", "results"]
ITEM_REQUIRED = ["url", "title", "captured_at", "score_final", "status"]
SCORES = ["score_final", "score_relevance", "score_freshness", "score_authority"]


def validate_bundle(doc: dict) -> SearchResultBundle:
    """Validate the way landing does: from JSON text."""
    return SearchResultBundle.model_validate_json(json.dumps(doc))


def first_error(doc: dict) -> dict:
    with pytest.raises(ValidationError) as caught:
        validate_bundle(doc)
    return caught.value.errors()[0]


def test_a_minimal_bundle_is_valid_and_counts_its_stats(new_bundle, new_item):
    doc = new_bundle("q1", [new_item("https://a.example/1"),
                            new_item("https://a.example/2", status="filtered"),
                            new_item("https://a.example/3", status="failed", error_code="timeout")])
    bundle = validate_bundle(doc)
    assert bundle.task_id == "t1"
    assert (bundle.stats.total_returned, bundle.stats.kept_after_filter, bundle.stats.failed_count) == (3, 1, 1)


@pytest.mark.parametrize("field", BUNDLE_REQUIRED)
def test_bundle_required_fields(new_bundle, new_item, field):
    doc = new_bundle("q1", [new_item("https://a.example/")])
    del doc[field]
    error = first_error(doc)
    assert (error["type"], error["loc"]) == ("missing", (field,))


@pytest.mark.parametrize("field", ITEM_REQUIRED)
def test_item_required_fields(new_bundle, new_item, field):
    items = [new_item("https://a.example/0"), new_item("https://a.example/1")]
    del items[1][field]
    error = first_error(new_bundle("q1", items))
    assert (error["type"], error["loc"]) == ("missing", ("results", 1, field))


def test_task_id_is_optional_in_the_bundle(new_bundle, new_item):
    assert validate_bundle(new_bundle("q1", [new_item("https://a.example/")], task_id=None)).task_id is None


@pytest.mark.parametrize("status", ["ok", "filtered", "failed"])
def test_status_accepts_the_three_states(new_item, status):
    item = SearchResultItem.model_validate(new_item("https://a.example/", status=status, error_code="blocked"))
    assert item.status == status


@pytest.mark.parametrize("status", ["OK", "error", "", None])
def test_status_outside_the_enum_is_refused(new_bundle, new_item, status):
    error = first_error(new_bundle("q1", [new_item("https://a.example/", status=status)]))
    assert error["loc"] == ("results", 0, "status")


@pytest.mark.parametrize("error_code", [None, ""])
def test_failed_item_needs_an_error_code(new_bundle, new_item, error_code):
    item = new_item("https://a.example/", status="failed")
    if error_code is not None:
        item["error_code"] = error_code
    error = first_error(new_bundle("q1", [new_item("https://a.example/0"), item]))
    # The error names the field to fix, not just the item.
    assert error["loc"] == ("results", 1, "error_code")
    assert "error_code" in error["msg"]


@pytest.mark.parametrize("field", SCORES)
@pytest.mark.parametrize("value", [0, 0.0, 0.5, 1, 1.0])
def test_scores_in_the_unit_interval_are_accepted(new_item, field, value):
    item = SearchResultItem.model_validate(new_item("https://a.example/", **{field: value}))
    assert getattr(item, field) == value


@pytest.mark.parametrize("field", SCORES)
@pytest.mark.parametrize("value", [-0.01, 1.0001, 5, "high"])
def test_scores_outside_the_unit_interval_are_refused(new_bundle, new_item, field, value):
    error = first_error(new_bundle("q1", [new_item("https://a.example/", **{field: value})]))
    assert error["loc"] == ("results", 0, field)


@pytest.mark.parametrize("text, expected", [
    ("2026-03-01T12:00:00Z", datetime(2026, 3, 1, 12, tzinfo=timezone.utc)),
    ("2026-03-01T12:00:00+02:00", datetime(2026, 3, 1, 10, tzinfo=timezone.utc)),
    ("2026-03-01T12:00:00-05:30", datetime(2026, 3, 1, 17, 30, tzinfo=timezone.utc)),
    ("2026-03-01T12:00:00", datetime(2026, 3, 1, 12, tzinfo=timezone.utc)),  # no offset: read as UTC
    ("2026-03-01T12:00:00.250+00:00", datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=timezone.utc)),
])
def test_iso_timestamps_become_utc(new_bundle, new_item, text, expected):
    doc = new_bundle("q1", [new_item("https://a.example/", captured_at=text, published_at=text)],
                     executed_at=text)
    bundle = validate_bundle(doc)
    for value in (bundle.executed_at, bundle.results[0].captured_at, bundle.results[0].published_at):
        assert value == expected
        assert value.utcoffset().total_seconds() == 0


@pytest.mark.parametrize("value", [1772366400, 1772366400.5, "1772366400", "1772366400.5", True, "yesterday"])
@pytest.mark.parametrize("where", ["executed_at", "captured_at", "published_at"])
def test_timestamps_that_are_not_iso_text_are_refused(new_bundle, new_item, value, where):
    item = new_item("https://a.example/")
    doc = new_bundle("q1", [item])
    if where == "executed_at":
        doc[where] = value
        expected_loc = (where,)
    else:
        item[where] = value
        expected_loc = ("results", 0, where)
    assert first_error(doc)["loc"] == expected_loc


def test_extra_fields_are_accepted_and_kept(new_bundle, new_item):
    doc = new_bundle("q1", [new_item("https://a.example/", agent_note="checked by hand")],
                     agent_version="7.1", trace={"span": "abc"})
    bundle = validate_bundle(doc)
    assert bundle.model_extra == {"agent_version": "7.1", "trace": {"span": "abc"}}
    assert bundle.results[0].model_extra == {"agent_note": "checked by hand"}


def test_extra_fields_are_kept_in_the_raw_json_in_the_lake(lake, inbox, new_bundle, new_item):
    doc = new_bundle("q1", [new_item("https://a.example/", agent_note="checked by hand")],
                     agent_version="7.1")
    path = inbox.write(doc)
    lake.ingest(path)
    (raw_path,) = lake.rows("SELECT raw_path FROM bundles")[0]
    stored = (lake.root / raw_path).read_bytes()
    assert stored == path.read_bytes()  # byte for byte, as received
    assert json.loads(stored)["agent_version"] == "7.1"
    assert json.loads(stored)["results"][0]["agent_note"] == "checked by hand"


BAD_IDENTIFIERS = ["../x", "a/b", "a\\b", "a\x00b", "", ".hidden", "..", "a b", "x" * 129, "-lead"]
GOOD_IDENTIFIERS = ["q1", "task-2026.v1", "_x", "Q_10", "x" * 128]


@pytest.mark.parametrize("field", ["task_id", "query_id"])
@pytest.mark.parametrize("value", BAD_IDENTIFIERS)
def test_identifiers_that_could_escape_a_path_are_refused(new_bundle, new_item, field, value):
    doc = new_bundle("q1", [new_item("https://a.example/")])
    doc[field] = value
    assert first_error(doc)["loc"] == (field,)


@pytest.mark.parametrize("field", ["task_id", "query_id"])
@pytest.mark.parametrize("value", GOOD_IDENTIFIERS)
def test_plain_identifiers_are_accepted(new_bundle, new_item, field, value):
    doc = new_bundle("q1", [new_item("https://a.example/")])
    doc[field] = value
    assert getattr(validate_bundle(doc), field) == value


# -- source_id -------------------------------------------------------------

CANONICAL = "https://example.com/docs/page?a=1&b=2"
SAME_PAGE = [
    "HTTPS://EXAMPLE.COM/docs/page?a=1&b=2",
    "https://Example.Com:443/docs/page?a=1&b=2",
    "https://example.com/docs/page?a=1&b=2#section-3",
    "https://example.com/docs/page?b=2&a=1",
    "https://example.com/docs/page?a=1&utm_source=news&b=2&utm_campaign=x",
    "https://example.com/docs/page?gclid=123&a=1&b=2",
    "https://example.com/docs/page?a=1&fbclid=abc&b=2",
    "https://user:secret@example.com/docs/page?a=1&b=2",
    "  https://example.com/docs/page?a=1&b=2  ",
]
OTHER_PAGES = [
    "https://example.com/docs/other?a=1&b=2",
    "https://example.com/Docs/page?a=1&b=2",  # paths are case-sensitive
    "https://example.com/docs/page?a=1&b=3",
    "https://example.com/docs/page?a=1",
    "http://example.com/docs/page?a=1&b=2",
    "https://example.com:8443/docs/page?a=1&b=2",
    "https://example.org/docs/page?a=1&b=2",
]


def test_source_id_is_the_documented_hash_of_the_normalized_url():
    # Anyone can reproduce the id: first 32 hex digits of sha256(normalized URL).
    assert normalize_url("HTTP://Example.com:80?utm_medium=x#top") == "http://example.com/"
    assert source_id_for(CANONICAL) == hashlib.sha256(CANONICAL.encode()).hexdigest()[:32]


@pytest.mark.parametrize("url", SAME_PAGE)
def test_the_same_page_written_differently_gets_one_source_id(url):
    assert source_id_for(url) == source_id_for(CANONICAL)


@pytest.mark.parametrize("url", OTHER_PAGES)
def test_a_different_page_gets_a_different_source_id(url):
    assert source_id_for(url) != source_id_for(CANONICAL)


def test_missing_source_id_is_derived_and_a_given_one_is_kept(new_item):
    derived = SearchResultItem.model_validate(new_item(SAME_PAGE[4]))
    given = SearchResultItem.model_validate(new_item(SAME_PAGE[4], source_id="doi:10.1/xyz"))
    assert derived.source_id == source_id_for(CANONICAL)
    assert given.source_id == "doi:10.1/xyz"
    assert derived.url == SAME_PAGE[4]  # identity is normalized, the URL itself is kept


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", "JavaScript:alert(1)", "  javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>", "vbscript:msgbox", "ftp://example.com/f",
    "mailto:a@example.com", "https://", "//example.com/x", "example.com/x",
])
def test_urls_outside_http_https_file_are_refused(new_item, url):
    with pytest.raises(ValidationError) as caught:
        SearchResultItem.model_validate(new_item(url))
    error = caught.value.errors()[0]
    assert error["loc"] == ("url",)
    assert isinstance(error["ctx"]["error"], UnsafeURL)


@pytest.mark.parametrize("url", ["https://example.com", "http://127.0.0.1:8080/x", "file:///srv/docs/a.pdf"])
def test_web_and_file_urls_are_accepted(new_item, url):
    assert SearchResultItem.model_validate(new_item(url)).url == url


def test_unsafe_urls_never_reach_the_consolidated_output(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://good.example/1"), new_item("javascript:alert(1)")]))
    inbox.write(new_bundle("q2", [new_item("data:text/html,hi"), new_item("https://good.example/2")]))
    inbox.write(new_bundle("q3", [new_item("https://good.example/3")]))
    report = lake.ingest(inbox.folder)
    lake.consolidate()

    assert sorted((r.reason, r.field) for r in report.refused) == [
        ("unsafe_url", "results[0].url"), ("unsafe_url", "results[1].url")]
    assert [row["url"] for row in lake.consolidated()] == ["https://good.example/3"]
    assert lake.rows("SELECT count(*) FROM results WHERE url NOT ILIKE 'http%'")[0][0] == 0


# -- JSON Schema -----------------------------------------------------------

def test_schema_command_prints_a_valid_json_schema_of_the_bundle(cli, new_bundle, new_item):
    done = cli.run("schema")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    good = new_bundle("q1", [new_item("https://a.example/", status="failed", error_code="timeout")])
    assert list(validator.iter_errors(good)) == []
    assert set(BUNDLE_REQUIRED) <= set(schema["required"])
    item_schema = schema["$defs"]["SearchResultItem"]
    assert set(ITEM_REQUIRED) <= set(item_schema["required"])
    assert item_schema["properties"]["status"]["enum"] == ["ok", "filtered", "failed"]
    missing_title = new_bundle("q1", [{k: v for k, v in new_item("https://a.example/").items() if k != "title"}])
    assert not validator.is_valid(missing_title)


# -- strict types, control characters, size limits ---------------------------

@pytest.mark.parametrize("field, value", [
    ("score_final", "0.5"), ("score_final", True), ("score_final", False), ("score_relevance", "1"),
    ("rank", True), ("rank", "3"), ("rank", 3.0), ("http_status", "200"), ("http_status", True),
    ("title", 5), ("title", True), ("snippet", 1.5), ("language", ["en"]),
])
def test_numbers_must_be_json_numbers_and_strings_strings(new_bundle, new_item, field, value):
    raw = json.dumps(new_bundle("q1", [new_item("https://a.example/", **{field: value})]))
    with pytest.raises(ValidationError) as refused:
        SearchResultBundle.model_validate_json(raw)
    assert refused.value.errors()[0]["loc"] == ("results", 0, field)


def test_an_integer_is_a_number_for_a_score(new_bundle, new_item):
    raw = json.dumps(new_bundle("q1", [new_item("https://a.example/", score_final=1, score_relevance=0)]))
    assert SearchResultBundle.model_validate_json(raw).results[0].score_final == 1.0


@pytest.mark.parametrize("char", ["\x00", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\x9f"])
def test_control_characters_in_a_url_refuse_the_bundle(new_bundle, new_item, char):
    raw = json.dumps(new_bundle("q1", [new_item(f"https://a.example/x{char}y")]))
    with pytest.raises(ValidationError) as refused:
        SearchResultBundle.model_validate_json(raw)
    error = refused.value.errors()[0]
    assert error["loc"] == ("results", 0, "url") and "control character" in error["msg"]


@pytest.mark.parametrize("field, limit", [("title", 2_000), ("snippet", 20_000), ("content_text", 1_000_000)])
def test_text_fields_have_size_limits(new_bundle, new_item, field, limit):
    at_limit = json.dumps(new_bundle("q1", [new_item("https://a.example/", **{field: "x" * limit})]))
    assert SearchResultBundle.model_validate_json(at_limit)
    past = json.dumps(new_bundle("q1", [new_item("https://a.example/", **{field: "x" * (limit + 1)})]))
    with pytest.raises(ValidationError) as refused:
        SearchResultBundle.model_validate_json(past)
    assert refused.value.errors()[0]["type"] == "string_too_long"


def test_urls_have_a_size_limit(new_bundle, new_item):
    base = "https://a.example/"
    ok = json.dumps(new_bundle("q1", [new_item(base + "p" * (8_192 - len(base)), title="t")]))
    assert SearchResultBundle.model_validate_json(ok)
    too_long = json.dumps(new_bundle("q1", [new_item(base + "p" * (8_193 - len(base)), title="t")]))
    with pytest.raises(ValidationError):
        SearchResultBundle.model_validate_json(too_long)
