"""Property tests: bundles broken in every way the contract forbids are
refused with a reason naming the field, the rest of their batch lands, and
nothing invalid reaches `consolidated`."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from schemas.bundle import (INT32_MAX, INT64_MAX, MAX_SNIPPET_CHARS, MAX_TITLE_CHARS, MAX_URL_CHARS,
                            SearchResultBundle)
from tasks.common.settings import Settings
from tasks.lake import validation
from tasks.lake.catalog import open_catalog
from tasks.lake.consolidation import consolidate
from tasks.lake.landing import land_files
from tasks.lake.validation import ReadyBundle, Refusal, Submission

CAPTURED = "2026-03-01T12:00:00Z"
SCORES = ("score_final", "score_relevance", "score_freshness", "score_authority")
TEXTS = ("title", "snippet", "content_text", "language", "error_code")
CONTROL = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=20)
hosts = st.from_regex(r"[a-z]{1,10}\.(com|org|example)", fullmatch=True)
paths = st.from_regex(r"(/[A-Za-z0-9_.~-]{0,12}){0,3}", fullmatch=True)
web_urls = st.builds(lambda scheme, host, path: f"{scheme}://{host}{path}", st.sampled_from(["http", "https"]),
                     hosts, paths)
scores = st.floats(0, 1, allow_nan=False)
# The largest number each integer field's lake column holds.
STATS_LIMITS = {"total_returned": INT32_MAX, "kept_after_filter": INT32_MAX, "failed_count": INT32_MAX,
                "dedup_count": INT32_MAX, "duration_ms": INT64_MAX}
ITEM_LIMITS = {"rank": INT32_MAX, "http_status": 599}


@st.composite
def items(draw, index: int) -> dict:
    item = {"url": draw(web_urls) + f"/{index}", "title": draw(words), "captured_at": CAPTURED,
            "score_final": draw(scores), "status": draw(st.sampled_from(["ok", "ok", "filtered", "failed"]))}
    if item["status"] == "failed":
        item["error_code"] = "timeout"
    for name in ("score_relevance", "score_freshness", "score_authority"):
        if draw(st.booleans()):
            item[name] = draw(scores)
    if draw(st.booleans()):
        item["snippet"] = draw(words)
    if draw(st.booleans()):
        item["rank"] = draw(st.integers(0, ITEM_LIMITS["rank"]))
    return item


@st.composite
def bundles(draw, query_id: str) -> dict:
    count = draw(st.integers(1, 4))
    doc = {"task_id": "fuzz", "query_id": query_id, "query_text": draw(words), "provider": "fuzz",
           "executed_at": CAPTURED, "results": [draw(items(i)) for i in range(count)]}
    if draw(st.booleans()):
        fields = draw(st.lists(st.sampled_from(sorted(STATS_LIMITS)), unique=True))
        doc["stats"] = {name: draw(st.integers(0, STATS_LIMITS[name])) for name in fields}
    return doc


# -- breakages: each returns (raw JSON text, reason, field) --------------------

def _set(doc: dict, index: int, field: str, value) -> str:
    doc["results"][index][field] = value
    return json.dumps(doc)


@st.composite
def broken(draw, doc: dict) -> tuple[str, str, str | None]:
    index = draw(st.integers(0, len(doc["results"]) - 1))
    at = f"results[{index}]"
    kind = draw(st.sampled_from([
        "number_as_text", "number_as_bool", "text_as_other", "control_in_url", "bad_scheme", "too_long",
        "duplicate_key", "too_deep", "file_outside", "missing", "out_of_range", "null_byte_title_url",
        "int_too_large",
    ]))
    if kind == "number_as_text":
        field = draw(st.sampled_from([*SCORES, "rank", "http_status"]))
        return _set(doc, index, field, draw(st.sampled_from(["0.5", "1", "200", " 0 "]))), "invalid_value", f"{at}.{field}"
    if kind == "number_as_bool":
        field = draw(st.sampled_from([*SCORES, "rank", "http_status"]))
        return _set(doc, index, field, draw(st.booleans())), "invalid_value", f"{at}.{field}"
    if kind == "text_as_other":
        field = draw(st.sampled_from(["title", "snippet", "content_text", "language"]))
        value = draw(st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.lists(st.integers(), max_size=2)))
        return _set(doc, index, field, value), "invalid_value", f"{at}.{field}"
    if kind in ("control_in_url", "null_byte_title_url"):
        char = "\x00" if kind == "null_byte_title_url" else draw(st.sampled_from(CONTROL))
        url = doc["results"][index]["url"]
        cut = draw(st.integers(len("https://x"), len(url)))
        return _set(doc, index, "url", url[:cut] + char + url[cut:]), "unsafe_url", f"{at}.url"
    if kind == "bad_scheme":
        scheme = draw(st.sampled_from(["javascript:", "data:", "ftp://", "vbscript:", "jar:", " javascript:"]))
        return _set(doc, index, "url", scheme + "alert(1)"), "unsafe_url", f"{at}.url"
    if kind == "too_long":
        field, limit = draw(st.sampled_from([("title", MAX_TITLE_CHARS), ("snippet", MAX_SNIPPET_CHARS),
                                             ("url", MAX_URL_CHARS)]))
        value = "https://a.example/" + "p" * limit if field == "url" else "x" * (limit + draw(st.integers(1, 50)))
        return _set(doc, index, field, value), "too_long", f"{at}.{field}"
    if kind == "duplicate_key":
        field = draw(st.sampled_from(["url", "title", "score_final", "status"]))
        text = json.dumps(doc)
        target = json.dumps(doc["results"][index])
        twin = target[:-1] + f', {json.dumps(field)}: {json.dumps(doc["results"][index][field])}' + "}"
        return text.replace(target, twin, 1), "duplicate_key", field
    if kind == "too_deep":
        depth = draw(st.integers(300, 3000))
        doc["results"][index]["extra"] = "@DEEP@"
        return json.dumps(doc).replace('"@DEEP@"', "[" * depth + "]" * depth), "too_deep", None
    if kind == "file_outside":
        path = draw(st.sampled_from(["/etc/passwd", "//host/share/x.md", "/tmp/../etc/shadow", "relative.md"]))
        return _set(doc, index, "url", "file:" + ("//" if path.startswith("/") else "") + path), "unsafe_url", f"{at}.url"
    if kind == "int_too_large":  # past its lake column: an OverflowError once took down the whole batch
        name = draw(st.sampled_from([*STATS_LIMITS, *ITEM_LIMITS]))
        limit = STATS_LIMITS.get(name) or ITEM_LIMITS[name]
        value = draw(st.one_of(st.just(limit + 1), st.integers(limit + 1, 2**80)))
        if name in STATS_LIMITS:
            doc.setdefault("stats", {})[name] = value
            return json.dumps(doc), "invalid_value", f"stats.{name}"
        return _set(doc, index, name, value), "invalid_value", f"{at}.{name}"
    if kind == "missing":
        field = draw(st.sampled_from(["url", "title", "captured_at", "score_final", "status"]))
        del doc["results"][index][field]
        return json.dumps(doc), "missing_field", f"{at}.{field}"
    field = draw(st.sampled_from(SCORES))
    value = draw(st.one_of(st.floats(1.0001, 1e9), st.floats(-1e9, -0.0001),
                           st.sampled_from([math.nan, math.inf, -math.inf])))
    return _set(doc, index, field, value), "invalid_value", f"{at}.{field}"


@st.composite
def broken_bundles(draw) -> tuple[str, str, str | None]:
    return draw(broken(draw(bundles("bad"))))


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broken_bundles())
def test_every_breakage_is_refused_with_its_reason_and_field(case):
    raw, reason, field = case
    outcome = validation.prepare(Submission("bad.json", raw.encode()), None, file_roots=())
    assert isinstance(outcome, Refusal), raw[:300]
    assert (outcome.reason, outcome.field) == (reason, field), f"{outcome.line()}\n{raw[:300]}"
    assert outcome.errors and outcome.raw == raw.encode()


@hsettings(max_examples=100, deadline=None)
@given(bundles("good"))
def test_every_valid_bundle_is_ready(doc):
    outcome = validation.prepare(Submission("good.json", json.dumps(doc).encode()), None, file_roots=())
    assert isinstance(outcome, ReadyBundle), getattr(outcome, "line", lambda: "")()


_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _not_utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# File names that are not UTF-8 (a file system takes any bytes but "/" and NUL).
odd_names = st.binary(min_size=1, max_size=12).map(lambda b: b.replace(b"/", b"_").replace(b"\0", b"_") + b".json"
                                                   ).filter(_not_utf8)


@hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(good=st.lists(bundles("placeholder"), min_size=1, max_size=4), bad=st.lists(broken_bundles(), min_size=1,
                                                                                     max_size=3),
       odd_name=st.none() | odd_names)
def test_a_batch_keeps_its_good_bundles_and_consolidated_stays_valid(settings, good, bad, odd_name):
    with tempfile.TemporaryDirectory() as home:
        lake_settings = Settings(home=Path(home) / "home")
        inbox = Path(home) / "inbox"
        inbox.mkdir()
        for n, doc in enumerate(good):
            doc["query_id"] = f"good{n}"
            for item in doc["results"]:  # one page per item: dedup is tested elsewhere
                item["url"] += f"?bundle={n}"
            (inbox / f"good{n}.json").write_text(json.dumps(doc))
        for n, (raw, _, _) in enumerate(bad):
            (inbox / f"bad{n}.json").write_text(raw.replace('"query_id": "bad"', f'"query_id": "bad{n}"', 1))
        expected = [(f"bad{n}.json", reason, field) for n, (_, reason, field) in enumerate(bad)]
        if odd_name is not None:  # a good bundle, but its name cannot be shown or stored as text
            with open(os.path.join(os.fsencode(inbox), odd_name), "w") as handle:
                handle.write(json.dumps(dict(good[0], query_id="odd")))
            expected.append((odd_name.decode("utf-8", "backslashreplace"), "bad_file_name", None))

        with open_catalog(lake_settings, "fuzz") as catalog:
            report = land_files(catalog, [inbox])
            consolidate(catalog, "fuzz")
        with open_catalog(lake_settings, "fuzz-read", read_only=True) as catalog:
            rows = catalog.con.execute("SELECT url, title, score_final FROM consolidated").fetchall()
            quarantined = catalog.con.execute("SELECT reason, field FROM quarantine").fetchall()

    assert sorted(q for _, q, _ in report.landed) == sorted(f"good{n}" for n in range(len(good)))
    assert sorted(((Path(r.source).name, r.reason, r.field) for r in report.refused), key=str) == sorted(expected, key=str)
    assert sorted(quarantined, key=str) == sorted([(reason, field) for _, reason, field in expected], key=str)
    expected_urls = {item["url"] for doc in good for item in doc["results"] if item["status"] == "ok"}
    assert {url for url, _, _ in rows} == expected_urls
    for url, title, score in rows:
        assert url.split(":", 1)[0] in ("http", "https") and not _CONTROL_RE.search(url)
        assert isinstance(title, str) and len(title) <= MAX_TITLE_CHARS and 0 <= score <= 1
    for doc in good:  # what landed still validates as the contract says
        SearchResultBundle.model_validate_json(json.dumps(doc))
