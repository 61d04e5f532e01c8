"""Landing's fast path (schemas.bundle.FAST_BUNDLE) must give exactly what
full validation gives: same verdict, same catalog row, same Parquet rows, over
synthetic bundles and a list of edge cases."""

from __future__ import annotations

import copy
import json

from bench.generate import bundles
from tasks.lake import landing, validation
from tasks.lake.validation import BundleHeader, ReadyBundle, Refusal, Submission

BASE_ITEM = {"url": "https://a.example/x", "title": "t", "captured_at": "2026-03-01T12:00:00Z",
             "score_final": 0.5, "status": "ok"}
BASE = {"task_id": "t1", "query_id": "q1", "query_text": "text", "provider": "p",
        "executed_at": "2026-03-01T11:00:00Z", "results": [BASE_ITEM]}


def item(**changes) -> dict:
    doc = {**BASE_ITEM, **changes}
    return {k: v for k, v in doc.items() if v is not _DROP}


def bundle(items=None, **changes) -> dict:
    doc = copy.deepcopy(BASE)
    if items is not None:
        doc["results"] = items
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not _DROP}


_DROP = object()

EDGE = [
    bundle(),
    bundle(task_id=_DROP),
    bundle(task_id=None),
    bundle(task_id="é-task"),
    bundle(query_id="q1\n"),
    bundle(query_id="q.1-a_b"),
    bundle(query_id=""),
    bundle(query_id="x" * 128),
    bundle(query_id="x" * 129),
    bundle(provider=""),
    bundle(query_intent=None),
    bundle(executed_at="2026-03-01T13:00:00+01:00"),
    bundle(executed_at="2026-03-01T13:00:00"),
    bundle(executed_at="2026-03-01"),
    bundle(executed_at="2026-03-01 13:00"),
    bundle(executed_at="1700000000"),
    bundle(executed_at=1700000000),
    bundle(executed_at=" 2026-03-01T13:00:00Z"),
    bundle(executed_at="2026-02-30T00:00:00Z"),
    bundle(executed_at="2026-03-01T13:00:00.1234567Z"),
    bundle(stats={"total_returned": 40, "dedup_count": 2}),
    bundle(stats=None),
    bundle(stats={"total_returned": -1}),
    bundle(stats={"total_returned": "7", "extra": 1}),
    # integers at and past what their lake column holds, timestamps at year 9999 in UTC
    *[bundle(stats={name: value}) for name in ("total_returned", "kept_after_filter", "failed_count", "dedup_count")
      for value in (2**31 - 1, 2**31, 2**63, 10**30)],
    *[bundle(stats={"duration_ms": value}) for value in (2**63 - 1, 2**63, 10**30)],
    *[bundle([item(rank=value)]) for value in (2**31 - 1, 2**31, 2**63)],
    bundle([item(http_status=2**63)]),
    bundle(executed_at="9998-12-31T23:00:00-05:00"),
    bundle(executed_at="9999-12-31T23:00:00-05:00"),
    bundle(executed_at="9999-12-31T23:00:00+05:00"),
    bundle([item(captured_at="9999-12-31T23:00:00-05:00")]),
    bundle(extra_field={"a": 1}),
    bundle([]),
    bundle([item(url="HTTPS://A.Example:443/x?utm_source=y#f")]),
    bundle([item(url="https://a.example/x?b=2&a=1&gclid=z")]),
    bundle([item(url="file:///home/me/doc.pdf")]),
    bundle([item(url="FILE:relative")]),
    bundle([item(url="javascript:void(0)")]),
    bundle([item(url=" https://a.example/lead")]),
    bundle([item(url="https://a.example/trail ")]),
    bundle([item(url="http:///nohost")]),
    bundle([item(url="https://[::1]:8080/x")]),
    bundle([item(url="https://[::1/x")]),
    bundle([item(url="https://é.example/x")]),
    bundle([item(url="")]),
    bundle([item(source_id="given")]),
    bundle([item(source_id=None)]),
    bundle([item(source_id="")]),
    bundle([item(source_id="s" * 257)]),
    bundle([item(status="failed")]),
    bundle([item(status="failed", error_code="")]),
    bundle([item(status="failed", error_code=None)]),
    bundle([item(status="failed", error_code="timeout", http_status=504)]),
    bundle([item(status="filtered")]),
    bundle([item(status="OK")]),
    bundle([item(rank=3.0)]),
    bundle([item(rank="3")]),
    bundle([item(rank=-1)]),
    bundle([item(rank=None)]),
    bundle([item(score_final="0.5")]),
    bundle([item(score_final=1)]),
    bundle([item(score_final=1.5)]),
    bundle([item(score_relevance=None, score_freshness=0.0, score_authority=1.0)]),
    bundle([item(http_status=99)]),
    bundle([item(http_status="200")]),
    bundle([item(title=None)]),
    bundle([item(title=5)]),
    bundle([item(title=_DROP)]),
    bundle([item(captured_at=_DROP)]),
    bundle([item(published_at="2020-01-01T00:00:00-05:00")]),
    bundle([item(published_at="12")]),
    bundle([item(published_at=None)]),
    bundle([item(snippet="s", content_text="c", language="en", other="x")]),
    *[bundle([item(captured_at=ts, published_at=ts)], executed_at=ts) for ts in (
        "2026-03-01T12:00:00.1Z", "2026-03-01T12:00:00.12Z", "2026-03-01T12:00:00.123Z",
        "2026-03-01T12:00:00.1234Z", "2026-03-01T12:00:00.12345Z", "2026-03-01T12:00:00.123456Z",
        "2026-03-01T12:00:00+23:59", "2026-03-01T12:00:00-23:59", "2026-03-01T00:00:00+05:30",
        "2024-02-29T12:00:00Z", "2026-02-29T12:00:00Z", "2026-04-31T12:00:00Z", "2026-12-31T23:59:59Z",
        "1000-01-01T00:00:00Z", "1000-01-01T00:00:00+01:00", "9998-12-31T23:59:59-23:00", "0999-01-01T00:00:00Z",
        "2026-03-01T12:00:00z", "2026-03-01t12:00:00Z", "2026-03-01T12:00:00", "2026-03-01T12:00Z",
        "2026-03-01T12:00:00+0100", "2026-03-01T12:00:00+01", "2026-03-01T12:00:60Z", "2026-03-01T24:00:00Z",
        "2026-03-01T12:00:00.1234567Z", "2026-03-01 12:00:00Z", "+2026-03-01T12:00:00Z")],
    bundle([item(title="\u00e9\u4e2d\U0001f600")]),
    # numbers are JSON numbers, strings are strings
    bundle([item(score_final=True)]),
    bundle([item(score_final=False)]),
    bundle([item(score_final=0)]),
    bundle([item(score_relevance="1")]),
    bundle([item(rank=True)]),
    bundle([item(http_status=200.0)]),
    bundle([item(http_status=True)]),
    bundle([item(title=True)]),
    bundle([item(snippet=1.5)]),
    bundle(stats={"failed_count": False}),
    bundle(query_text=7),
    # control characters in URLs
    *[bundle([item(url=f"https://a.example/x{c}y")]) for c in ("\x00", "\t", "\n", "\r", "\x1f", "\x7f",
                                                                 "\x85", "\x9f", "\u00a0", "\u2028")],
    bundle([item(url="file:///lib/a\x00.md")]),
    # size limits, at and past each
    *[bundle([item(**{name: "x" * n})]) for name, limit in (("title", 2_000), ("snippet", 20_000),
                                                             ("content_text", 1_000_000))
      for n in (limit, limit + 1)],
    *[bundle([item(url="https://a.example/" + "p" * (n - len("https://a.example/")))]) for n in (8_192, 8_193)],
    bundle(query_text="q" * 4_000),
    bundle(query_text="q" * 4_001),
    bundle(provider="p" * 257),
    bundle([item(error_code="e" * 257, status="failed")]),
    bundle([item(url=f"https://a.example/{i}", score_final=i / 10) for i in range(10)]),
]
RAW_EDGE = [
    b"not json",
    b'{"task_id": "t1", "query_id": "q1", "results": [',
    b"[1, 2]",
    json.dumps(bundle()).replace('"query_id": "q1"', '"query_id": "q1", "query_id": "q2"').encode(),
    json.dumps(bundle([item(title="\ud800")])).encode(),
    json.dumps(bundle()).replace('"url": "https://a.example/x"', '"url": "javascript:x", "url": "https://a.example/x"').encode(),
    json.dumps(bundle(extra={"a": 1, "b": {"a": 2, "a": 3}})).encode(),
    json.dumps(bundle()).replace('"title": "t"', '"title": "t", "Title": "T"').encode(),
    json.dumps(bundle()).replace('"provider": "p"', '"provider": "p", "deep": ' + "[" * 1100 + "]" * 1100).encode(),
    json.dumps(bundle()).replace('"provider": "p"', '"provider": "p", "deep": ' + '{"a":' * 1100 + "1" + "}" * 1100).encode(),
    b"[" * 5000,
]


def outcome_of(fn, sub: Submission, default_task: str | None):
    try:
        return fn(sub, default_task)
    except Exception as exc:  # noqa: BLE001
        return exc


def compare(sub: Submission, default_task: str | None) -> bool:
    """True when the fast path took it; raises AssertionError on a difference."""
    if validation._unparsable_shape(sub) is not None:  # refused before either path looks at it
        assert isinstance(validation.prepare(sub, default_task), Refusal), sub.source
        return False
    fast = validation._fast_candidate(sub, default_task)
    full = outcome_of(validation.validate, sub, default_task)
    if fast is None:
        return False
    where = f"{sub.source} (task default {default_task!r})"
    assert isinstance(full, ReadyBundle), f"{where}: fast path accepted what validation refuses: {full!r}"
    assert fast.header == BundleHeader.of(full.bundle), f"{where}: header {fast.header} != {BundleHeader.of(full.bundle)}"
    assert fast.content_hash == full.content_hash and fast.uid == full.uid, where
    try:
        expected = landing.results_table([full])
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"{where}: fast path accepted what results_table cannot convert: {exc!r}")
    got = landing.results_table([fast])
    assert got.schema == expected.schema, where
    assert got.equals(expected), f"{where}: rows differ\n{got.to_pylist()}\n{expected.to_pylist()}"
    assert validation.prepare(sub, default_task).header == fast.header, where
    return True


def test_fast_path_gives_what_full_validation_gives():
    subs = [Submission(f"edge{i}", json.dumps(doc).encode()) for i, doc in enumerate(EDGE)]
    subs += [Submission(f"raw{i}", raw) for i, raw in enumerate(RAW_EDGE)]
    subs += [Submission(q, json.dumps(doc).encode()) for q, doc in bundles(4000, 500, seed=11)]
    fast = 0
    for sub in subs:
        for default_task in (None, "default-task"):
            fast += compare(sub, default_task)
            # prepare() as a whole: the same verdict as validate()
            got = outcome_of(validation.prepare, sub, default_task)
            full = validation._unparsable_shape(sub) or outcome_of(validation.validate, sub, default_task)
            full = validation._with_item_columns(full) if not isinstance(full, Exception) else full
            if isinstance(full, Refusal):
                assert got == full, f"{sub.source}: {got!r} != {full!r}"
            else:
                assert type(got) is type(full), f"{sub.source}: {got!r} vs {full!r}"
    assert fast > len(subs) // 2, "the fast path should take the plain synthetic bundles"
