"""Progress events: the weighted progress math and the JSONL log of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas.events import EventPayload, ProgressEvent
from tasks.lake.files import run_logs_root
from tasks.server.events import EventLog, ProgressTracker, list_runs, read_events

STEPS = [("plan", 1, "Plan"), ("deep_search", 3, "Deep search", "search"), ("reporting", 1, "Report")]


def test_progress_is_the_weighted_share_of_the_work_done():
    tracker = ProgressTracker(STEPS)
    assert tracker.begin().progress == 0.0
    assert tracker.start("plan").progress == 0.0
    assert tracker.complete("plan").progress == pytest.approx(0.2)
    assert tracker.start("deep_search").progress == pytest.approx(0.2)
    assert tracker.advance("deep_search", 0.5).progress == pytest.approx(0.5)
    assert tracker.complete("deep_search").progress == pytest.approx(0.8)
    assert tracker.advance("reporting", 0.5, chunk="# Title").progress == pytest.approx(0.9)
    assert tracker.complete("reporting", result={"markdown": "# Title"}).progress == pytest.approx(1.0)
    assert tracker.finish().progress == 1.0


def test_progress_never_goes_backwards_and_stays_within_0_and_1():
    tracker = ProgressTracker(STEPS)
    tracker.advance("deep_search", 0.9)
    assert tracker.advance("deep_search", 0.1).progress == pytest.approx(0.54)
    assert tracker.advance("deep_search", 7).progress == pytest.approx(0.6)  # fraction clamped to 1


def test_step_id_is_the_legacy_alias_and_defaults_to_the_step_type():
    tracker = ProgressTracker(STEPS)
    search = tracker.start("deep_search").to_wire()
    plan = tracker.start("plan").to_wire()
    assert (search["stepId"], search["stepType"], search["label"]) == ("search", "deep_search", "Deep search")
    assert (plan["stepId"], plan["stepType"]) == ("plan", "plan")


def test_an_error_event_carries_the_error_and_a_null_result():
    tracker = ProgressTracker(STEPS)
    tracker.complete("plan")
    wire = tracker.error("deep_search", "all providers failed").to_wire()
    assert wire["status"] == "error" and wire["progress"] == pytest.approx(0.2)
    assert wire["payload"] == {"error": "all providers failed", "result": None}
    failed = tracker.fail({"code": "no_sources", "message": "nothing found"})
    assert failed.is_terminal and failed.to_wire()["payload"]["result"] is None


def test_error_events_without_an_error_or_with_a_result_are_refused():
    with pytest.raises(ValidationError):
        ProgressEvent(stepId="s", stepType="s", status="error", progress=0.1)
    with pytest.raises(ValidationError):
        ProgressEvent(stepId="s", stepType="s", status="error", progress=0.1,
                      payload=EventPayload(error="x", result={"partial": 1}))
    with pytest.raises(ValidationError):
        ProgressEvent(stepId="s", stepType="s", status="done", progress=0.1)
    with pytest.raises(ValidationError):
        ProgressEvent(stepId="s", stepType="s", status="progress", progress=1.5)


def test_bad_steps_are_refused():
    with pytest.raises(ValueError, match="unknown step"):
        ProgressTracker(STEPS).start("modeling")
    with pytest.raises(ValueError):
        ProgressTracker([])
    with pytest.raises(ValueError):
        ProgressTracker([("a", 0, "A")])
    with pytest.raises(ValueError):
        ProgressTracker([("a", -1, "A"), ("b", 2, "B")])


def test_only_the_pipeline_end_is_terminal():
    tracker = ProgressTracker(STEPS)
    assert not tracker.complete("plan").is_terminal
    assert not tracker.error("deep_search", "x").is_terminal
    assert tracker.finish().is_terminal


def test_the_log_is_one_flushed_json_line_per_event_under_the_run_key(settings):
    log = EventLog.for_run(settings, "t1", "r1")
    expected = Path(settings.lake_root) / "runs" / "task_id=t1" / "run_id=r1" / "events.jsonl"
    assert log.path == expected
    tracker = ProgressTracker(STEPS, sink=log)
    tracker.begin()
    tracker.start("plan", metadata={"tokens": 0})
    # readable while the log is still open: a follower sees events live
    lines = expected.read_text().splitlines()
    assert len(lines) == 2
    tracker.advance("deep_search", 0.5, chunk="partial text")
    tracker.error("reporting", "model down")
    tracker.fail("model down")
    log.close()

    docs = [json.loads(line) for line in expected.read_text().splitlines()]
    assert [d["status"] for d in docs] == ["start", "start", "progress", "error", "error"]
    assert set(docs[0]) == {"stepId", "stepType", "status", "progress", "label", "payload", "ts"}
    assert docs[1]["payload"] == {"metadata": {"tokens": 0}}
    assert docs[2]["payload"] == {"chunk": "partial text"}
    assert docs[3]["payload"] == {"error": "model down", "result": None}
    assert [e.status for e in read_events(expected)] == [d["status"] for d in docs]


def test_a_second_log_on_the_same_run_appends(settings):
    for _ in range(2):
        with EventLog.for_run(settings, "t1", "r1") as log:
            ProgressTracker(STEPS, sink=log).begin()
    assert len(read_events(log.path)) == 2


@pytest.mark.parametrize("task_id, run_id", [("../x", "r1"), ("t1", "a/b"), ("", "r1"), (".hidden", "r1")])
def test_ids_that_are_not_identifiers_never_become_paths(settings, task_id, run_id):
    with pytest.raises(ValueError):
        EventLog.for_run(settings, task_id, run_id)
    assert not Path(settings.lake_root).exists() or not any(Path(settings.lake_root).rglob("*.jsonl"))


def test_runs_are_listed_from_their_event_files(settings):
    for task, run in [("t1", "r1"), ("t1", "r2"), ("t2", "r1")]:
        with EventLog.for_run(settings, task, run) as log:
            ProgressTracker(STEPS, sink=log).begin()
    found = {(r.task_id, r.run_id) for r in list_runs(run_logs_root(settings))}
    assert found == {("t1", "r1"), ("t1", "r2"), ("t2", "r1")}


def test_a_remote_lake_keeps_live_logs_under_home(settings):
    remote = settings.model_copy(update={"lake": "memory://lake-bucket/prefix"})
    assert run_logs_root(remote) == Path(settings.home) / "events"
