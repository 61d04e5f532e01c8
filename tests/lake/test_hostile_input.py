"""Files written to hurt: whatever a bundle file holds, it is refused with a
reason or it lands; the rest of its batch always lands."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from bench.generate import bundles
from tests.conftest import in_thread, release_blocked_reader
from tasks.lake import landing, validation_pool


def good_files(inbox, new_bundle, new_item, count: int = 5) -> list[Path]:
    return [inbox.write(new_bundle(f"good{n}", [new_item(f"https://good.example/{n}")])) for n in range(count)]


def deep_json(levels: int = 1100) -> str:
    return '{"query_id": "deep", "results": ' + "[" * levels + "]" * levels + "}"


@pytest.fixture
def in_workers(monkeypatch):
    """Validate in worker processes even for a handful of small files."""
    monkeypatch.setattr(validation_pool, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(validation_pool, "WORKERS", 2)


@pytest.mark.parametrize("mode", ["in process", "in workers"])
def test_deeply_nested_json_is_quarantined_and_the_batch_lands(request, lake, inbox, new_bundle, new_item, mode):
    if mode == "in workers":
        request.getfixturevalue("in_workers")
    good = good_files(inbox, new_bundle, new_item, 6)
    deep = inbox.write_text(deep_json(), "deep.json")
    assert 1_800 < deep.stat().st_size < 2_500

    report = lake.ingest(inbox.folder)

    assert sorted(q for _, q, _ in report.landed) == sorted(p.stem for p in good)
    assert [(r.source, r.reason) for r in report.refused] == [(str(deep), "too_deep")]
    assert lake.rows("select reason from quarantine") == [("too_deep",)]


def test_deep_nesting_in_the_command_line_is_one_refused_line(cli, inbox, new_bundle, new_item):
    good_files(inbox, new_bundle, new_item, 3)
    inbox.write_text(deep_json(), "deep.json")
    done = cli.run("ingest", str(inbox.folder))
    assert done.returncode == 1
    assert "landed 3 bundles" in done.stdout
    assert [line for line in done.stderr.splitlines() if "deep.json" in line] == [
        f"refused {inbox.folder / 'deep.json'}: too_deep: JSON nested too deep "
        "(recursion limit exceeded at line 1 column 233)"]


def test_duplicate_keys_refuse_the_file(lake, inbox, new_bundle, new_item):
    text = json.dumps(new_bundle("q1", [new_item("https://a.example/")]))
    text = text.replace('"url": "https://a.example/"', '"url": "javascript:alert(1)", "url": "https://a.example/"')
    bad = inbox.write_text(text, "dup.json")
    good_files(inbox, new_bundle, new_item, 2)

    report = lake.ingest(inbox.folder)

    assert len(report.landed) == 2
    [refusal] = report.refused
    assert (refusal.source, refusal.reason, refusal.field) == (str(bad), "duplicate_key", "url")
    assert lake.rows("select count(*) from results where url like 'javascript:%'") == [(0,)]
    assert not lake.files_under("raw/task_id=t1/query_id=q1/")


@pytest.mark.parametrize("field, value", [("score_final", "0.5"), ("score_final", True), ("rank", "1"),
                                          ("title", 12), ("http_status", "404")])
def test_values_of_the_wrong_json_type_are_refused_with_their_field(lake, inbox, new_bundle, new_item, field, value):
    inbox.write(new_bundle("q1", [new_item("https://a.example/"), new_item("https://b.example/", **{field: value})]))
    good_files(inbox, new_bundle, new_item, 1)

    report = lake.ingest(inbox.folder)

    [refusal] = report.refused
    assert (refusal.reason, refusal.field, refusal.item_index) == ("invalid_value", f"results[1].{field}", 1)
    assert len(report.landed) == 1


@pytest.mark.parametrize("url", ["https://a.example/\x00x", "https://a.example/x\ny", "https://a.example/\x7f",
                                 "http://a.example/\u0085"])
def test_a_url_with_control_characters_never_reaches_consolidated(lake, inbox, new_bundle, new_item, url):
    inbox.write(new_bundle("q1", [new_item("https://ok.example/"), new_item(url)]))
    good_files(inbox, new_bundle, new_item, 2)
    report = lake.ingest(inbox.folder)
    lake.consolidate()
    [refusal] = report.refused
    assert (refusal.reason, refusal.field) == ("unsafe_url", "results[1].url")
    assert sorted(url for url, in lake.rows("select url from consolidated")) == [
        "https://good.example/0", "https://good.example/1"]


def test_a_five_megabyte_title_is_refused_as_too_long(lake, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/", title="t" * 5_000_000)]))
    [refusal] = lake.ingest(inbox.folder).refused
    assert (refusal.reason, refusal.field) == ("too_long", "results[0].title")


# -- file: URLs of ingested bundles -------------------------------------------

@pytest.fixture
def library(tmp_path) -> Path:
    folder = tmp_path / "library"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "doc.md").write_text("# doc\n")
    return folder


@pytest.mark.parametrize("url", ["file:///etc/passwd", "file://host/share/doc.md", "file:relative/doc.md",
                                 "FILE:///etc/shadow", "file://{library}/../outside.md",
                                 "file://{library}/link-out.md", "file://{library}%2F..%2F..%2Fetc/passwd"])
def test_ingested_file_urls_outside_the_library_are_refused(lake, inbox, new_bundle, new_item, library, url):
    (library / "link-out.md").symlink_to("/etc/passwd")
    inbox.write(new_bundle("q1", [new_item("https://a.example/"), new_item(url.format(library=library))]))
    report = lake.ingest(inbox.folder, libraries=[library])
    [refusal] = report.refused
    assert (refusal.reason, refusal.field, refusal.item_index) == ("unsafe_url", "results[1].url", 1)
    assert "outside" in refusal.message


def test_without_a_library_every_ingested_file_url_is_refused(lake, inbox, new_bundle, new_item, library):
    inbox.write(new_bundle("q1", [new_item((library / "sub" / "doc.md").as_uri())]))
    [refusal] = lake.ingest(inbox.folder).refused
    assert refusal.reason == "unsafe_url"


def test_file_urls_inside_the_library_land(lake, inbox, new_bundle, new_item, library, monkeypatch):
    doc = (library / "sub" / "doc.md").as_uri()
    inbox.write(new_bundle("q1", [new_item(doc), new_item(doc + "?topic=x")]))
    assert len(lake.ingest(inbox.folder, libraries=[library]).landed) == 1
    monkeypatch.setattr(lake.settings, "library", str(library))  # SEARCHLAKE_LIBRARY
    inbox.write(new_bundle("q2", [new_item(doc)]))
    assert len(lake.ingest(inbox.folder / "q2.json").landed) == 1


# -- re-ingesting -------------------------------------------------------------

def test_the_same_bundle_written_differently_is_unchanged(lake, inbox, new_bundle, new_item):
    doc = new_bundle("q1", [new_item("https://a.example/", 0.5, rank=1), new_item("https://b.example/", 0.25)])
    lake.ingest(inbox.write_text(json.dumps(doc), "compact.json"))
    reordered = {key: doc[key] for key in reversed(list(doc))}
    reordered["results"] = [dict(reversed(list(item.items()))) for item in doc["results"]]
    text = json.dumps(reordered, indent=4).replace("0.25", "2.5e-1").replace("a.example", "a\\u002eexample")

    report = lake.ingest(inbox.write_text(text, "pretty.json"))

    assert (report.landed, report.unchanged, report.refused) == ([], [("t1", "q1")], [])
    changed = dict(doc, query_text="another text")
    assert lake.ingest(inbox.write_text(json.dumps(changed), "changed.json")).refused[0].reason == "conflict"


def test_the_same_bundle_twice_in_one_batch_written_differently_lands_once(lake, inbox, new_bundle, new_item):
    doc = new_bundle("q1", [new_item("https://a.example/")])
    inbox.write_text(json.dumps(doc), "a.json")
    inbox.write_text(json.dumps(doc, indent=2, sort_keys=True), "b.json")
    report = lake.ingest(inbox.folder)
    assert len(report.landed) == 1 and len(report.unchanged) == 1 and not report.refused


# -- worker processes ---------------------------------------------------------

def test_a_file_that_kills_its_worker_is_refused_and_the_rest_lands(lake, inbox, new_bundle, new_item,
                                                                    in_workers, monkeypatch):
    real_prepare = validation_pool.prepare

    def dies_on_poison(sub, *args):
        if "poison" in sub.source:
            os._exit(3)  # a worker killed mid-file, as by the OOM killer
        return real_prepare(sub, *args)

    monkeypatch.setattr(validation_pool, "prepare", dies_on_poison)  # the forked workers inherit it
    good = good_files(inbox, new_bundle, new_item, 8)
    inbox.write(new_bundle("poison", [new_item("https://p.example/")]))

    report = lake.ingest(inbox.folder)

    assert sorted(q for _, q, _ in report.landed) == sorted(p.stem for p in good)
    assert [(Path(r.source).name, r.reason) for r in report.refused] == [("poison.json", "validation_crashed")]


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_validation_workers_die_with_a_killed_ingest(cli, tmp_path):
    inbox = tmp_path / "big"
    inbox.mkdir()
    for query_id, doc in bundles(120_000, 1000, seed=3):
        (inbox / f"{query_id}.json").write_text(json.dumps(doc))
    ingest = cli.popen("ingest", str(inbox))
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while not workers and ingest.poll() is None and time.monotonic() < deadline:
            workers = children_of(ingest.pid)
            time.sleep(0.05)
        assert workers, "the ingest ended before its workers were seen"
        ingest.send_signal(signal.SIGKILL)
        ingest.wait()
        deadline = time.monotonic() + 30
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if alive(w)], "validation workers outlived their parent"
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait()
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# -- numbers past what the lake can store --------------------------------------

INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1
# Each integer field at the first value its column cannot hold (counts and
# rank are INTEGER columns, duration_ms a BIGINT), and far past it.
TOO_LARGE = [(f"stats.{name}", value) for name in ("total_returned", "kept_after_filter", "failed_count",
                                                    "dedup_count") for value in (INT32_MAX + 1, 2**63)]
TOO_LARGE += [("stats.duration_ms", INT64_MAX + 1), ("stats.duration_ms", 10**30),
              ("results[0].rank", INT32_MAX + 1), ("results[0].rank", 2**63), ("results[0].http_status", 2**63)]


def with_value(bundle: dict, field: str, value) -> dict:
    part, name = field.split(".")
    target = bundle["results"][0] if part == "results[0]" else bundle.setdefault("stats", {})
    target[name] = value
    return bundle


@pytest.mark.parametrize("field, value", TOO_LARGE)
def test_an_integer_too_large_for_its_column_is_refused_and_the_batch_lands(lake, inbox, new_bundle, new_item,
                                                                          field, value):
    good = good_files(inbox, new_bundle, new_item, 20)
    bad = inbox.write(with_value(new_bundle("big", [new_item("https://big.example/")]), field, value))

    report = lake.ingest(inbox.folder)

    assert sorted(q for _, q, _ in report.landed) == sorted(p.stem for p in good)
    assert [(r.source, r.reason, r.field) for r in report.refused] == [(str(bad), "invalid_value", field)]
    assert lake.rows("select reason, field from quarantine") == [("invalid_value", field)]
    # nothing half-written: one raw file per landed bundle, one quarantined copy
    assert len(lake.files_under("raw/")) == len(good) and len(lake.files_under("quarantine/")) == 1


@pytest.mark.parametrize("field, value", [("stats.total_returned", INT32_MAX), ("stats.dedup_count", INT32_MAX),
                                          ("stats.duration_ms", INT64_MAX), ("results[0].rank", INT32_MAX)])
def test_the_largest_integer_a_column_holds_lands(lake, inbox, new_bundle, new_item, field, value):
    inbox.write(with_value(new_bundle("big", [new_item("https://big.example/")]), field, value))
    assert [q for _, q, _ in lake.ingest(inbox.folder).landed] == ["big"]
    column = field.split(".")[1]
    table = "results" if field.startswith("results") else "bundles"
    assert lake.rows(f"select {column} from {table}") == [(value,)]


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
@pytest.mark.parametrize("field", ["score_final", "score_relevance"])
def test_scores_that_are_not_finite_are_refused_with_their_field(lake, inbox, new_bundle, new_item, field, text):
    raw = json.dumps(new_bundle("q1", [new_item("https://a.example/", **{field: 0.125})])).replace("0.125", text)
    inbox.write_text(raw, "q1.json")
    good_files(inbox, new_bundle, new_item, 2)
    report = lake.ingest(inbox.folder)
    assert [(r.reason, r.field) for r in report.refused] == [("invalid_value", f"results[0].{field}")]
    assert len(report.landed) == 2


@pytest.mark.parametrize("field", ["executed_at", "results[0].captured_at", "results[0].published_at"])
def test_a_timestamp_past_year_9999_in_utc_is_refused_with_its_field(lake, inbox, new_bundle, new_item, field):
    bundle = new_bundle("q1", [new_item("https://a.example/")])
    target = bundle if field == "executed_at" else bundle["results"][0]
    target[field.rsplit(".", 1)[-1]] = "9999-12-31T23:00:00-05:00"
    inbox.write(bundle)
    good_files(inbox, new_bundle, new_item, 2)
    report = lake.ingest(inbox.folder)
    assert [(r.reason, r.field) for r in report.refused] == [("invalid_value", field)]
    assert len(report.landed) == 2



# -- file names ----------------------------------------------------------------

def write_badly_named(folder: Path, name: bytes, text: str) -> str:
    """A file whose name is not UTF-8; returns its path as refusals show it."""
    with open(os.path.join(os.fsencode(folder), name), "w") as handle:
        handle.write(text)
    return f"{folder}/{name.decode('utf-8', 'backslashreplace')}"


def test_a_file_name_that_is_not_utf8_is_refused_and_the_batch_lands(lake, inbox, new_bundle, new_item):
    good = good_files(inbox, new_bundle, new_item, 3)
    shown = write_badly_named(inbox.folder, b"\xff\xfe.json", json.dumps(new_bundle("odd", [new_item("https://o/")])))

    report = lake.ingest(inbox.folder)

    assert sorted(q for _, q, _ in report.landed) == sorted(p.stem for p in good)
    assert [(r.source, r.reason) for r in report.refused] == [(shown, "bad_file_name")]
    assert report.refused[0].line() == f"refused {shown}: bad_file_name: file name is not valid UTF-8"
    assert lake.rows("select source_path, reason from quarantine") == [(shown, "bad_file_name")]


def test_a_file_name_that_is_not_utf8_is_one_line_on_the_command_line(cli, inbox, new_bundle, new_item):
    good_files(inbox, new_bundle, new_item, 2)
    shown = write_badly_named(inbox.folder, b"caf\xe9.json", "{")
    done = cli.run("ingest", str(inbox.folder))
    assert done.returncode == 1 and "landed 2 bundles" in done.stdout
    assert [line for line in done.stderr.splitlines() if "caf" in line] == [
        f"refused {shown}: bad_file_name: file name is not valid UTF-8"]


# -- what ingest reads ---------------------------------------------------------

SECRET = b"SEARCHLAKE_TEST_API_KEY=sk-do-not-copy-4711"


@pytest.fixture
def secret(tmp_path) -> Path:
    """A file outside every folder ingest is given (the stand-in for /etc/passwd)."""
    path = tmp_path / "secret.env"
    path.write_bytes(SECRET + b"\n")
    return path


def assert_secret_nowhere_under(home: Path) -> None:
    for folder, _, names in os.walk(home):
        for name in names:
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink():
                assert SECRET not in path.read_bytes(), f"the secret was copied into {path}"


def refusals(report) -> list[tuple[str, str, str]]:
    return sorted((Path(r.source).name, r.reason, r.message) for r in report.refused)


OUTSIDE = "a link to a file outside the folder"


def test_links_leading_out_of_the_folder_are_refused_and_never_read(lake, inbox, new_bundle, new_item, secret,
                                                                    tmp_path):
    good = good_files(inbox, new_bundle, new_item, 2)
    (inbox.folder / "environ.json").symlink_to("/proc/self/environ")  # the process's API keys
    (inbox.folder / "passwd.json").symlink_to(secret)
    (inbox.folder / "up.json").symlink_to("../secret.env")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "q9.json").write_text(json.dumps(new_bundle("q9", [new_item("https://x.example/")])))
    (inbox.folder / "linked").symlink_to(elsewhere, target_is_directory=True)  # not walked
    kept = inbox.write(new_bundle("kept", [new_item("https://k.example/")]), "store/kept.data")
    (inbox.folder / "alias.json").symlink_to("store/kept.data")  # a link inside the folder is read

    report = lake.ingest(inbox.folder)

    assert sorted(q for _, q, _ in report.landed) == sorted([*(p.stem for p in good), kept.stem])
    assert refusals(report) == [(name, "unsafe_file", OUTSIDE) for name in ("environ.json", "passwd.json",
                                                                             "up.json")]
    assert lake.rows("select reason, stored_path from quarantine") == [("unsafe_file", None)] * 3
    assert_secret_nowhere_under(Path(lake.settings.home))


def test_special_files_are_refused_without_blocking(lake, inbox, new_bundle, new_item):
    good = good_files(inbox, new_bundle, new_item, 2)
    fifo = inbox.folder / "fifo.json"
    os.mkfifo(fifo)
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(inbox.folder / "socket.json"))
    try:
        report = in_thread(lambda: lake.ingest(inbox.folder))
    finally:
        release_blocked_reader(fifo)
        listening.close()

    assert sorted(q for _, q, _ in report.landed) == sorted(p.stem for p in good)
    assert refusals(report) == [("fifo.json", "unsafe_file", "not a regular file (a FIFO)"),
                                ("socket.json", "unsafe_file", "not a regular file (a socket)")]


@pytest.mark.parametrize("swap", ["link to the secret", "FIFO", "folder linked outside"])
def test_a_file_swapped_after_listing_is_not_read(lake, inbox, new_bundle, new_item, secret, tmp_path,
                                                  monkeypatch, swap):
    """Between listing a folder and reading a file, whoever writes into the
    folder can swap the file: what is read is decided when it is opened."""
    good = good_files(inbox, new_bundle, new_item, 2)
    target = inbox.write(new_bundle("swapped", [new_item("https://s.example/")]), "sub/swapped.json")
    listed = landing.expand_paths

    def list_then_swap(paths, *args, **kwargs):
        found = listed(paths, *args, **kwargs)
        if swap == "folder linked outside":
            outside = tmp_path / "outside"
            outside.mkdir()
            (outside / "swapped.json").write_bytes(SECRET)
            os.rename(target.parent, tmp_path / "moved-away")
            target.parent.symlink_to(outside, target_is_directory=True)
        elif swap == "link to the secret":
            target.unlink()
            target.symlink_to(secret)
        else:
            target.unlink()
            os.mkfifo(target)
        return found

    monkeypatch.setattr(landing, "expand_paths", list_then_swap)
    try:
        report = in_thread(lambda: lake.ingest(inbox.folder))
    finally:
        release_blocked_reader(target)

    assert sorted(q for _, q, _ in report.landed) == sorted(p.stem for p in good)
    [refusal] = report.refused
    assert (refusal.source, refusal.reason) == (str(target), "unsafe_file")
    assert_secret_nowhere_under(Path(lake.settings.home))


def test_a_link_named_on_the_command_line_is_read_only_inside_its_folder(cli, lake, inbox, new_bundle, new_item,
                                                                         secret):
    real = inbox.write(new_bundle("q1", [new_item("https://a.example/")]), "q1.data")
    (inbox.folder / "q1.json").symlink_to(real.name)
    (inbox.folder / "passwd.json").symlink_to(secret)

    done = cli.run("ingest", str(inbox.folder / "q1.json"), str(inbox.folder / "passwd.json"))

    assert done.returncode == 1 and "landed 1 bundles" in done.stdout
    assert [line for line in done.stderr.splitlines() if "passwd" in line] == [
        f"refused {inbox.folder / 'passwd.json'}: unsafe_file: {OUTSIDE}"]
    assert_secret_nowhere_under(Path(lake.settings.home))


# -- sizes -----------------------------------------------------------------------

HEAD = 64 << 10  # what quarantine keeps of a refused file


def whole_file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while piece := handle.read(1 << 20):
            digest.update(piece)
    return digest.hexdigest()


def test_a_file_over_the_size_limit_is_refused_unread_and_only_its_head_is_quarantined(cli, lake, inbox,
                                                                                      new_bundle, new_item):
    good = good_files(inbox, new_bundle, new_item, 2)
    big = inbox.write(new_bundle("big", [new_item("https://big.example/")]), "big.json")
    limit = 64 << 20  # the default SEARCHLAKE_MAX_BUNDLE_BYTES
    os.truncate(big, limit + (36 << 20))  # sparse: cheap on disk, 100 MiB to whoever reads it

    done = cli.run("ingest", str(inbox.folder))

    assert done.returncode == 1 and "landed 2 bundles" in done.stdout
    assert [line for line in done.stderr.splitlines() if "big.json" in line] == [
        f"refused {big}: too_large: the file holds {big.stat().st_size:,} bytes, more than the limit of "
        f"{limit:,} (SEARCHLAKE_MAX_BUNDLE_BYTES)"]
    assert lake.rows("SELECT list(query_id ORDER BY query_id) FROM bundles")[0][0] == sorted(p.stem for p in good)
    [row] = lake.dicts("SELECT * FROM quarantine")
    assert (row["reason"], row["size_bytes"]) == ("too_large", big.stat().st_size)
    assert row["sha256"] == whole_file_sha256(big)
    kept = (lake.root / row["stored_path"]).read_bytes()
    assert kept == big.read_bytes()[:HEAD]


def test_the_size_limit_is_a_setting(cli, lake, inbox, new_bundle, new_item):
    small = inbox.write(new_bundle("small", [new_item("https://s.example/")]))
    done = cli.run("ingest", str(inbox.folder), SEARCHLAKE_MAX_BUNDLE_BYTES="1024")
    assert done.returncode == 0 and "landed 1 bundles" in done.stdout
    small.write_text(json.dumps(new_bundle("small", [new_item("https://s.example/", snippet="x" * 2000)])))
    done = cli.run("ingest", str(small), "--replace", SEARCHLAKE_MAX_BUNDLE_BYTES="1024")
    assert done.returncode == 1 and "too_large" in done.stderr and "limit of 1,024" in done.stderr


@pytest.mark.parametrize("case", ["not_json", "invalid_value"])
def test_quarantine_keeps_a_bounded_head_of_any_refused_file_with_its_hash_and_size(lake, inbox, new_bundle,
                                                                                    new_item, case):
    good = good_files(inbox, new_bundle, new_item, 2)
    filler = "x" * 15_000  # 200 KiB and more in all: past what quarantine keeps, within the size limit
    items = [new_item(f"https://f.example/{n}", snippet=filler) for n in range(15)]
    if case == "invalid_value":
        items[-1]["score_final"] = 7
    text = json.dumps(new_bundle("filled", items))
    bad = inbox.write_text(text if case == "invalid_value" else text[:-1] + "!!", "filled.json")
    assert bad.stat().st_size > 3 * HEAD

    report = lake.ingest(inbox.folder)

    assert sorted(q for _, q, _ in report.landed) == sorted(p.stem for p in good)
    assert [r.reason for r in report.refused] == [case]
    [row] = lake.dicts("SELECT * FROM quarantine")
    assert (row["sha256"], row["size_bytes"]) == (whole_file_sha256(bad), bad.stat().st_size)
    assert (lake.root / row["stored_path"]).read_bytes() == bad.read_bytes()[:HEAD]


@pytest.mark.parametrize("named, read", [
    ("{root}/reports/task_id=k/report_id=ab12/report.json", True),
    ("{root}/reports/task_id=k/report_id=ab12/./report.json", True),
    ("{root}/reports/task_id=other/report_id=ab12/report.json", False),
    ("{root}/reports/task_id=k/report_id=ab12/report.md", False),
    ("{root}/reports/task_id=k/report_id=ab12/../../../../secret/report.json", False),
    ("{root}/reports/task_id=k/report_id=a.b/report.json", False),
    ("{root}/reports/task_id=k/ab12/report.json", False),
    ("reports/task_id=k/report_id=ab12/report.json", False),
    ("/elsewhere/reports/task_id=k/report_id=ab12/report.json", False),
])
def test_a_report_file_a_run_names_is_read_only_where_the_lake_keeps_that_tasks_reports(settings, named, read):
    """`searchlake research` reads the answer from the file the run's last
    event names (anyone may write that file): only a report file of the task,
    in this lake's folder, by the lake's layout."""
    from tasks.lake.files import Lake, published_report_file
    root = Lake(settings.lake_root).root
    uri = named.format(root=root)
    for path in {Path(os.path.normpath(uri)), Path(root, "reports/task_id=k/report_id=ab12/report.json")}:
        if str(path).startswith(root):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
    found = published_report_file(settings, "k", uri)
    assert (found == Path(os.path.normpath(uri))) if read else found is None
    assert published_report_file(settings, "k", None) is None and published_report_file(settings, "k", ["x"]) is None


def test_a_link_planted_where_a_run_published_its_report_is_not_followed(settings, tmp_path):
    from tasks.lake.files import Lake, published_report_file
    folder = Path(Lake(settings.lake_root).root, "reports/task_id=k/report_id=ab12")
    folder.mkdir(parents=True)
    (tmp_path / "secret").write_text("not a report")
    (folder / "report.json").symlink_to(tmp_path / "secret")
    assert published_report_file(settings, "k", str(folder / "report.json")) is None
    assert published_report_file(settings, "k", str(folder / "missing" / "report.json")) is None
