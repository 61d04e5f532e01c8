"""Watches end to end on the real Prefect engine (the session's temporary
server): rounds of a watch search afresh into one topic, and the changes
they record equal what changed behind them — files added, edited and
deleted in a library folder; results that come, go and change at a SearXNG
on 127.0.0.1. The report opens with what changed, Prefect gets a markdown
artifact and an event, `searchlake changes` prints it, and the watch's
deployment is made and removed through Prefect's API.

The scenarios are bench/watch.py's, smaller."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import timedelta
from pathlib import Path

import pytest

from bench.watch import TRACKED, LibraryScenario, SearxServer, moves_consistent, recorded, start_watch
from tests.conftest import error_lines, prefect_artifacts, prefect_events

NOTHING = {"source_added": 0, "source_dropped": 0, "source_moved": 0, "content_changed": 0, "insight_added": 0,
           "insight_removed": 0, "quote_added": 0, "quote_removed": 0}


def test_library_rounds_record_what_was_done_to_the_folder(prefect_engine, settings, lake, cli, tmp_path):
    from flows.watch import watch_round
    folder = LibraryScenario(tmp_path / "library", 4, random.Random(3))
    start_watch(settings, "notes", {"library": str(folder.folder), "providers": ["library"], "target": 3})

    first = watch_round("notes")
    assert first["round"] == 1 and first["previous_round"] is None
    assert first["changes"] == {**NOTHING, "answer_unchanged": 0}  # nothing to compare with yet
    done = folder.change(adds=1, edits=1, deletes=1)
    second = watch_round("notes")
    found = recorded(settings, "notes", 2)
    assert {kind: found[kind] for kind in TRACKED} == done.kinds
    assert moves_consistent(settings, "notes", 2)
    assert second["changes"]["source_added"] == 1
    assert second["summary"].startswith("Round 2, since round 1: 1 new source")
    third = watch_round("notes")  # nothing was done to the folder
    assert third["changes"] == {**NOTHING, "answer_unchanged": 1}
    assert "nothing changed since round 2" in third["summary"]

    # every round searched afresh, into the same topic, and stays queryable
    per_round = {r["round"]: r["n"] for r in lake.dicts(
        "SELECT split_part(query_id, '.', 1) AS round, count(*) AS n FROM bundles WHERE task_id = 'watch-notes' "
        "GROUP BY ALL")}
    assert set(per_round) == {"r1", "r2", "r3"} and len(set(per_round.values())) == 1
    assert [(r["round"], r["status"]) for r in lake.dicts(
        "SELECT round, status FROM watch_rounds WHERE topic = 'watch-notes' ORDER BY round")] == [
        (1, "complete"), (2, "complete"), (3, "complete")]
    kept = lake.dicts("SELECT round, count(*) AS n FROM watch_round_sources GROUP BY ALL ORDER BY round")
    assert [r["n"] for r in kept] == [4, 4, 4]  # one dropped, one added

    # the report says it first; Prefect shows it and is told
    report = cli.run("report", "--task-id", "watch-notes")
    assert report.stdout.splitlines()[4:7] == ["## What changed", "", third["summary"]]
    html = cli.run("report", "--task-id", "watch-notes", "--format", "html").stdout
    assert -1 < html.find('<section id="changes">') < html.find('<section id="answer">')
    assert "round 3" in prefect_artifacts("watch-changes-notes")[0].data
    changed = watch_events("searchlake.watch.changed", "notes", [2])
    assert changed[0].payload["source_dropped"] == 1 and changed[0].resource.id == "searchlake.watch.notes"
    watch_events("searchlake.watch.unchanged", "notes", [1, 3])

    # searchlake changes: compact, within 80 columns
    printed = cli.run("changes", "--topic", "notes", COLUMNS="80")
    assert printed.returncode == 0
    lines = printed.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].startswith("round 2 · ") and any(line.startswith("round 3 · ") for line in lines)
    assert any(line.strip().startswith("source added #") for line in lines)
    assert lines[-1].strip() == "answer unchanged"
    # a long quote is wrapped, not cut: its end, where a changed quote often differs, is shown
    said = " ".join(" ".join(lines).split())
    quotes = [" ".join(r["detail"].split()) for r in lake.dicts("SELECT detail FROM changes WHERE kind LIKE 'quote%'")]
    assert quotes and all(quote in said for quote in quotes), printed.stdout
    later = cli.run("changes", "--topic", "watch-notes", "--since", "1d")
    assert later.stdout == printed.stdout
    none_since = cli.run("changes", "--topic", "notes", "--since", "2099-01-01")  # a known topic: not an error
    assert none_since.returncode == 0 and "no changes recorded for 'notes' since 2099-01-01" in none_since.stderr


def watch_events(name: str, watch: str, rounds: list[int], wait: float = 60.0) -> list:
    """The events of that name about the watch, once Prefect has stored one
    for each of `rounds` (it stores them a moment after they are emitted)."""
    give_up = time.monotonic() + wait
    while True:
        found = [e for e in prefect_events(name) if e.payload["watch"] == watch]
        if sorted(e.payload["round"] for e in found) == rounds or time.monotonic() > give_up:
            break
        time.sleep(0.5)
    assert sorted(e.payload["round"] for e in found) == rounds
    return sorted(found, key=lambda e: e.payload["round"])


def test_web_rounds_record_what_changed_at_the_provider(prefect_engine, settings, monkeypatch):
    from flows.watch import watch_round
    web = SearxServer(4, random.Random(5))
    monkeypatch.setenv("SEARXNG_URL", web.base)
    monkeypatch.setenv("SEARCHLAKE_ALLOW_PRIVATE_FETCH", "true")  # the pages are on 127.0.0.1
    try:
        start_watch(settings, "web", {"providers": ["searxng"], "target": 3})
        watch_round("web")
        done = web.change(adds=1, edits=1, deletes=1)
        watch_round("web")
    finally:
        web.close()
    found = recorded(settings, "web", 2)
    assert {kind: found[kind] for kind in TRACKED} == done.kinds
    assert moves_consistent(settings, "web", 2)


def test_a_failed_round_is_recorded_and_the_next_compares_with_the_last_complete_one(prefect_engine, settings,
                                                                                     lake, tmp_path):
    import shutil
    from flows.watch import watch_round
    folder = LibraryScenario(tmp_path / "library", 3, random.Random(4))
    start_watch(settings, "gone", {"library": str(folder.folder), "providers": ["library"], "target": 2})
    watch_round("gone")
    shutil.move(folder.folder, tmp_path / "away")
    state = watch_round("gone", return_state=True)
    assert state.is_failed()
    shutil.move(tmp_path / "away", folder.folder)
    third = watch_round("gone")
    assert third["round"] == 3 and third["previous_round"] == 1
    rounds = lake.dicts("SELECT round, status, error FROM watch_rounds ORDER BY round")
    assert [(r["round"], r["status"]) for r in rounds] == [(1, "complete"), (2, "failed"), (3, "complete")]
    assert "does not exist" in rounds[1]["error"]


def test_a_round_of_a_removed_or_unknown_watch_fails_and_records_nothing(prefect_engine, settings, lake):
    from flows.watch import watch_round
    state = watch_round("nobody", return_state=True)
    assert state.is_failed() and "no watch named 'nobody'" in state.message
    assert lake.count("watch_rounds") == 0


def test_a_watch_is_a_deployment_with_an_interval_schedule_on_the_searchlake_pool(prefect_engine):
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    from flows.watch_schedule import FLOW_NAME, PROJECT, deploy_watch, undeploy_watch
    from schemas.watch import Watch

    watch = Watch(name="solar", question="How efficient are solar panels?", interval_seconds=6 * 3600)
    deployment_id = deploy_watch(watch)

    async def read():
        async with get_client() as client:
            return await client.read_deployment_by_name(f"{FLOW_NAME}/watch-solar")
    deployment = asyncio.run(read())
    assert str(deployment.id) == deployment_id
    assert deployment.work_pool_name == "searchlake" and deployment.entrypoint == "flows/watch.py:watch_round"
    assert deployment.parameters == {"name": "solar"} and deployment.global_concurrency_limit.limit == 1
    assert [s.schedule.interval for s in deployment.schedules] == [timedelta(hours=6)]
    assert deployment.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": str(PROJECT)}}]
    assert (PROJECT / deployment.entrypoint.split(":")[0]).is_file()

    async def pool():
        async with get_client() as client:
            return await client.read_work_pool("searchlake")
    assert asyncio.run(pool()).type == "process"  # made as `prefect work-pool create` makes it, when missing

    assert undeploy_watch("solar") is True
    with pytest.raises(ObjectNotFound):
        asyncio.run(read())
    assert undeploy_watch("solar") is False


def test_the_documented_change_automation_is_one_prefect_accepts(prefect_engine):
    """automations/watch-changed.yaml, created as `prefect automation create
    --from-file` creates it, reacts to the event a changed round emits."""
    import yaml
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore
    from prefect.events.schemas.events import Resource

    spec = AutomationCore.model_validate(yaml.safe_load(Path("automations/watch-changed.yaml").read_text()))

    async def create_and_read():
        async with get_client() as client:
            return await client.read_automation(await client.create_automation(spec))
    created = asyncio.run(create_and_read())
    assert created.trigger.expect == {"searchlake.watch.changed"} and created.trigger.posture == "Reactive"
    assert created.trigger.match.matches(Resource({"prefect.resource.id": "searchlake.watch.notes"}))
    assert not created.trigger.match.matches(Resource({"prefect.resource.id": "searchlake.lake"}))


@pytest.mark.parametrize("args, said", [
    (("watch", "remove", "nope"), "error: no watch named 'nope' (searchlake watch list shows them)"),
    (("watch", "run", "nope"), "error: no watch named 'nope' (searchlake watch list shows them)"),
    (("watch", "add", "solar panels?", "--every", "5x"),
     "error: --every '5x' is not an interval: write e.g. 6h, 30m, 1d or 90s"),
    (("watch", "add", "solar panels?", "--every", "10s"), "error: --every '10s' must be between 1 minute and a year"),
    (("watch", "add", " ", "--every", "6h"), "error: the question is empty"),
    (("watch", "add", "solar panels?", "--every", "6h", "--name", "../x"),
     "error: invalid --name '../x': must be 1-128 letters, digits, '_', '.' or '-', starting with a letter, "
     "digit or '_'"),
    (("changes", "--topic", "notes", "--since", "last tuesday"),
     "error: --since 'last tuesday' is neither a date or time (2026-11-24, 2026-11-24T08:00) nor a span back (6h, 2d)"),
])
def test_bad_input_is_one_line_and_a_failure(cli, args, said):
    done = cli.run(*args)
    assert done.returncode != 0 and error_lines(done.stderr) == [said], done.stderr


SINCE_ACCEPTS = ("a date or time from 0001-01-02 to 9999-12-30 (2026-11-24, 2026-11-24T08:00) or a span back "
                 "of at most 36500d (6h, 2d)")


@pytest.mark.parametrize("since", ["0001-01-01", "0001-01-01T00:00+01:00", "9999-12-31T23:59-05:00",
                                   "36501d", "99999999999d", "9999999999999999999999s"])
def test_a_since_out_of_range_is_one_line_saying_what_it_takes(cli, since):
    done = cli.run("changes", "--topic", "notes", "--since", since)
    assert done.returncode == 2
    assert done.stderr == f"error: --since {since!r} is out of range: it takes {SINCE_ACCEPTS}\n"


@pytest.mark.parametrize("since", ["0001-01-02", "9999-12-30T23:59", "36500d", "0s"])
def test_a_since_at_the_ends_of_its_range_is_taken(cli, since):
    done = cli.run("changes", "--topic", "notes", "--since", since)
    assert error_lines(done.stderr) == ["error: no watch or topic named 'notes' (searchlake watch list shows "
                                        "the watches)"]  # the value was taken; the topic is what is missing


def test_without_watches_list_says_so_and_changes_names_the_unknown_topic(cli):
    listed = cli.run("watch", "list")
    assert listed.returncode == 0 and "no watch yet" in listed.stderr
    changes = cli.run("changes", "--topic", "notes")
    assert changes.returncode == 2 and error_lines(changes.stderr) == [
        "error: no watch or topic named 'notes' (searchlake watch list shows the watches)"], changes.stderr


# -- what Prefect's UI renders of a question ---------------------------------------

PIXEL = "http://example.com/p.png"
HOSTILE_QUESTIONS = {
    "markdown image": f"How do panels age? ![x]({PIXEL})",
    "html image": f'How do panels age? <img src="{PIXEL}">',
    "link": f"How do panels age? [read this]({PIXEL})",
    "bare url": f"How do panels age? {PIXEL} www.example.com/p.png owner@example.com",
}


@pytest.mark.parametrize("question", HOSTILE_QUESTIONS.values(), ids=HOSTILE_QUESTIONS.keys())
def test_a_questions_markdown_forms_no_image_or_link_where_prefect_renders_it(question):
    markdown_it = pytest.importorskip("markdown_it")
    from flows.watch import round_markdown
    from flows.watch_schedule import deployment_description
    from schemas.watch import Change, Watch
    from tasks.reporting.build import build_report
    from tasks.synthesis.synthesizer import synthesize
    from tests.report_helpers import make_sources

    watch = Watch(name="panels", question=question, interval_seconds=3600)
    renderer = markdown_it.MarkdownIt("commonmark")  # CommonMark with raw HTML allowed, as Prefect's UI
    report = build_report(synthesize(make_sources(), question, None), None, task_id="t1")  # the report artifact
    change = Change("source_added", url="https://a.example/", title=question, new_rank=1)
    for name, markdown in {"deployment description": deployment_description(watch),
                           "round artifact": round_markdown(watch, 2, "Round 2, since round 1: 1 new source.",
                                                            [change]),
                           "report artifact": report.markdown}.items():
        html = renderer.render(markdown)
        assert "<img" not in html, name
        assert f'href="{PIXEL}"' not in html and 'href="http://www.example.com' not in html, name
        # no bare URL, www. or address left for a GitHub-flavoured renderer to make a link of
        bare = markdown.replace("\\://", "").replace("www\\.", "").replace("\\@", "")
        assert "://example.com" not in bare and "www.example" not in bare and "@example" not in bare, name
        assert "example.com/p.png" in html, name  # the question still reads as it was written
