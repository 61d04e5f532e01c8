"""The record of a governed run: the runs row from start to finish, the
trace (JSONL lines + run_events rows), the outcome tables and the views."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from schemas.governance import Budget, Drop, GateResult, Policy
from tasks.lake.catalog import open_catalog
from tasks.lake.commits import commit_scope
from tasks.common.settings import Settings
from tasks.selection.gates import build_output
from tasks.selection.filters import Candidate, aggregate_publishers
from tasks.common.processes import ProcessIdentity
from tasks.records.runs import close_dead_runs, finish_run, record_outcome, start_run
from tasks.records.summary import RunSummary
from tasks.records.trace import TraceLog, trace_path

TASK = "t1"


@pytest.fixture
def trace_id() -> str:
    return uuid.uuid4().hex


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def selected() -> list[Candidate]:
    return [Candidate("s1", "https://a.org/1", "One", score_final=0.8, quality=0.9),
            Candidate("s2", "https://a.org/2", "Two", score_final=0.7, quality=0.7),
            Candidate("s3", "file:///lib/x.md", "Three", score_final=0.6, quality=0.5)]


def test_views_exist_and_are_empty(lake):
    for view in ("runs", "run_events", "selections", "drops", "publishers", "publisher_sources"):
        assert lake.count(view) == 0


def test_start_then_finish(lake, settings, trace_id):
    start_run(settings, trace_id, TASK, "Why?", "42", "db", Budget(timeout_seconds=60), Policy(max_keywords=4))
    start_run(settings, trace_id, TASK, "Why?", "42", "db", Budget(timeout_seconds=60))  # a retry adds nothing
    (row,) = lake.dicts("SELECT * FROM runs")
    assert (row["trace_id"], row["task_id"], row["question"], row["demand_id"], row["policy_source"],
            row["status"]) == (trace_id, TASK, "Why?", "42", "db", "running")
    assert json.loads(row["budget"]) == {"timeout_seconds": 60, "max_target_count": 10, "max_fallback_rounds": 1}
    assert json.loads(row["policy"])["max_keywords"] == 4
    assert row["finished_at"] is None

    trace = TraceLog(settings, TASK, trace_id)
    with trace.stage("hard_filter") as detail:
        detail["kept"] = 5
    finish_run(settings, trace_id, "complete", candidate_count=9, filtered_count=3, publisher_count=2,
               elapsed_seconds=12.3456, stage_history=trace.history, outputs={"output": "runs/x/output.json"})
    (row,) = lake.dicts("SELECT * FROM runs")
    assert (row["status"], row["candidate_count"], row["filtered_count"], row["publisher_count"],
            row["elapsed_seconds"]) == ("complete", 9, 3, 2, 12.346)
    history = json.loads(row["stage_history"])
    assert [(s["name"], s["status"], s["attempt"], s["detail"]) for s in history] == [
        ("hard_filter", "complete", 1, {"kept": 5})]
    assert json.loads(row["outputs"]) == {"output": "runs/x/output.json"}
    assert row["finished_at"] is not None and row["error"] is None


def test_finish_refuses_an_unknown_status(settings, trace_id):
    with pytest.raises(ValueError, match="running"):
        finish_run(settings, trace_id, "running")


def test_trace_writes_jsonl_lines_and_event_rows(lake, settings, trace_id):
    trace = TraceLog(settings, TASK, trace_id)
    assert trace.path == Path(settings.lake_root) / f"runs/task_id={TASK}/run_id={trace_id}/trace.jsonl"
    trace.run("running", {"question": "Why?"})
    with trace.stage("search") as detail:
        detail["candidates"] = 30
    trace.gate(GateResult("search_completeness", "pass", "30 >= 20", {"candidates": 30}))
    with pytest.raises(RuntimeError):
        with trace.stage("quality_filter", attempt=2):
            raise RuntimeError("model down")
    trace.run("failed")

    lines = lines_of(trace.path)
    assert [(e["seq"], e["kind"], e["name"], e["status"]) for e in lines] == [
        (1, "run", "run", "running"), (2, "stage", "search", "running"), (3, "stage", "search", "complete"),
        (4, "gate", "search_completeness", "pass"), (5, "stage", "quality_filter", "running"),
        (6, "stage", "quality_filter", "failed"), (7, "run", "run", "failed")]
    assert all(e["trace_id"] == trace_id and e["task_id"] == TASK and e["at"] for e in lines)
    assert lines[3]["detail"] == {"reason": "30 >= 20", "candidates": 30}
    assert lines[5]["detail"]["error"] == "RuntimeError: model down" and lines[5]["detail"]["attempt"] == 2

    rows = lake.dicts("SELECT * FROM run_events WHERE trace_id = ? ORDER BY seq", [trace_id])
    assert [(r["seq"], r["kind"], r["name"], r["status"]) for r in rows] == \
        [(e["seq"], e["kind"], e["name"], e["status"]) for e in lines]
    assert json.loads(rows[2]["detail"])["candidates"] == 30
    assert [r["event_at"] for r in rows] == [datetime.fromisoformat(e["at"]) for e in lines]
    assert [(s.name, s.status) for s in trace.history] == [("search", "complete"), ("quality_filter", "failed")]
    assert trace.attempts("quality_filter") == 1 and not trace.db_errors


def test_a_resumed_trace_continues_its_numbering(settings, trace_id):
    TraceLog(settings, TASK, trace_id).run("running")
    TraceLog(settings, TASK, trace_id).run("complete")
    assert [e["seq"] for e in lines_of(trace_path(settings, TASK, trace_id))] == [1, 2]


def event_rows(lake, trace_id: str) -> list[tuple]:
    return lake.rows("SELECT seq, kind, name, status FROM run_events WHERE trace_id = ? ORDER BY seq", [trace_id])


def as_rows(lines: list[dict]) -> list[tuple]:
    return [(e["seq"], e["kind"], e["name"], e["status"]) for e in lines]


def test_trace_lines_wait_while_another_command_holds_the_catalog(lake, settings, trace_id, hold_catalog):
    quick = Settings(home=settings.home, lock_timeout=0.3)
    trace = TraceLog(quick, TASK, trace_id)
    holder = hold_catalog()  # another command on the same lake
    trace.run("running")
    trace.stage_done("search", "complete")
    holder.release()
    assert len(lines_of(trace.path)) == 2  # the file, the primary trace, has them at once
    # the run line found the catalog busy; the stage line waits for the next run line without trying
    assert len(trace.db_errors) == 1 and "busy" in trace.db_errors[0]
    assert lake.count("run_events") == 0

    trace.run("complete")  # the next run line takes the waiting ones with it
    assert event_rows(lake, trace_id) == as_rows(lines_of(trace.path)) == [
        (1, "run", "run", "running"), (2, "stage", "search", "complete"), (3, "run", "run", "complete")]


def test_the_last_line_is_sent_at_flush(lake, settings, trace_id, hold_catalog):
    trace = TraceLog(Settings(home=settings.home, lock_timeout=0.3), TASK, trace_id)
    holder = hold_catalog()
    trace.run("complete")
    holder.release()
    trace.flush()
    assert event_rows(lake, trace_id) == [(1, "run", "run", "complete")]


def test_a_resumed_trace_sends_the_lines_its_rows_lack(lake, settings, trace_id, hold_catalog):
    first = TraceLog(Settings(home=settings.home, lock_timeout=0.3), TASK, trace_id)
    first.run("running")
    holder = hold_catalog()
    first.stage_done("plan", "complete")  # its process then died: the line is in the file only
    holder.release()
    TraceLog(settings, TASK, trace_id).run("running")
    assert event_rows(lake, trace_id) == [(1, "run", "run", "running"), (2, "stage", "plan", "complete"),
                                          (3, "run", "run", "running")]


def test_a_trace_resumed_after_a_torn_line_starts_a_line_of_its_own(lake, settings, trace_id):
    TraceLog(settings, TASK, trace_id).run("running")
    path = trace_path(settings, TASK, trace_id)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"trace_id": "' + trace_id + '", "seq": 2, "ki')  # its process died mid-line
    TraceLog(settings, TASK, trace_id).run("complete")
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert (last["seq"], last["status"]) == (2, "complete")
    assert event_rows(lake, trace_id) == [(1, "run", "run", "running"), (2, "run", "run", "complete")]


def test_many_runs_at_once_lose_no_trace_line(lake, settings):
    """A server running twenty runs at once: every line of every trace is a row."""
    quick = Settings(home=settings.home, lock_timeout=0.05)
    traces = [TraceLog(quick, TASK, uuid.uuid4().hex) for _ in range(20)]

    def run(trace: TraceLog) -> None:
        trace.run("running")
        for name in ("plan", "search", "consolidate", "report"):
            with trace.stage(name):
                pass
        trace.run("complete")

    threads = [threading.Thread(target=run, args=(trace,)) for trace in traces]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    for trace in traces:
        assert event_rows(lake, trace.trace_id) == as_rows(lines_of(trace.path))
        assert len(lines_of(trace.path)) == 10 and trace.db_errors == []


def test_trace_refuses_ids_that_are_not_path_safe(settings):
    with pytest.raises(ValueError):
        TraceLog(settings, "../escape", "x")


def test_record_outcome_fills_the_outcome_views_and_replaces_on_retry(lake, settings, trace_id):
    chosen = selected()
    publishers = aggregate_publishers(chosen)
    drops = [Drop("s9", "javascript:x", "Bad", "hard_filter", "URL scheme 'javascript' is not http, https or file"),
             Drop("s8", "https://b.org/", "Late", "quality_filter", "beyond target count (3)")]
    output = build_output(12, chosen, publishers)
    key = record_outcome(settings, trace_id, TASK, chosen, drops, publishers, output=output)
    record_outcome(settings, trace_id, TASK, chosen, drops, publishers, output=output)

    assert key == f"runs/task_id={TASK}/run_id={trace_id}/output.json"
    assert json.loads((Path(settings.lake_root) / key).read_text()) == output
    assert lake.rows("SELECT source_id, rank, quality FROM selections ORDER BY rank") == [
        ("s1", 1, 0.9), ("s2", 2, 0.7), ("s3", 3, 0.5)]
    assert lake.rows("SELECT source_id, stage FROM drops ORDER BY source_id") == [
        ("s8", "quality_filter"), ("s9", "hard_filter")]
    pubs = lake.dicts("SELECT * FROM publishers ORDER BY publisher")
    assert [(p["publisher"], p["article_count"]) for p in pubs] == [("a.org", 2), ("local library", 1)]
    assert json.loads(pubs[0]["sample_titles"]) == ["One", "Two"]
    assert json.loads(pubs[0]["source_urls"]) == ["https://a.org/1", "https://a.org/2"]
    assert lake.rows("SELECT publisher, source_id FROM publisher_sources ORDER BY source_id") == [
        ("a.org", "s1"), ("a.org", "s2"), ("local library", "s3")]
    # Every relation joins to a selection and a publisher of the same run.
    assert lake.rows("""SELECT count(*) FROM publisher_sources r
                        JOIN selections s USING (trace_id, source_id)
                        JOIN publishers p USING (trace_id, publisher)""") == [(3,)]


def test_record_outcome_with_nothing_selected(lake, settings, trace_id):
    assert record_outcome(settings, trace_id, TASK, [], [], []) is None
    assert lake.count("selections") == 0 and lake.count("publishers") == 0


def test_summary_lines_and_load(settings, trace_id):
    start_run(settings, trace_id, TASK, "Why?", None, "default(fallback)", Budget())
    trace = TraceLog(settings, TASK, trace_id)
    trace.stage_done("search", "complete", seconds=1.3)
    finish_run(settings, trace_id, "timed_out", candidate_count=4, elapsed_seconds=1800.2,
               stage_history=trace.history, error="the run exceeded its 1800 s budget")
    summary = RunSummary.load(settings, trace_id)
    assert summary.exit_code == 1
    text = "\n".join(summary.lines())
    for words in (trace_id, "status:        timed_out", "policy source: default(fallback)", "candidates:    4",
                  "filtered:      0", "publishers:    0", "elapsed:       1800.2 s", "search: complete (attempt 1) 1.3 s",
                  "outputs:       (none)", "error:         the run exceeded its 1800 s budget"):
        assert words in text
    assert RunSummary.load(settings, "no-such-trace") is None
    ok = RunSummary(trace_id, TASK, "complete", outputs={"report": "reports/x/report.md"})
    assert ok.exit_code == 0 and "  report: reports/x/report.md" in ok.lines()
    # the one line the terminal ends on counts as a sentence does
    one = RunSummary(trace_id, TASK, "complete", candidate_count=1, filtered_count=1, publisher_count=1,
                     elapsed_seconds=2.8)
    assert one.headline() == "complete in 2.8 s — 1 candidate source, 1 selected, 1 publisher"
    assert summary.headline() == "timed_out in 1800.2 s — 4 candidate sources, 0 selected, 0 publishers"


@pytest.mark.parametrize("carried", [
    None, "complete", {"trace_id": "t"}, {"trace_id": "t", "task_id": "k", "status": "complete", "candidate_count": "4"},
    {"trace_id": "t", "task_id": "k", "status": "complete", "outputs": ["report"]},
    {"trace_id": "t", "task_id": "k", "status": "complete", "stage_history": ["search"]},
    {"trace_id": "t", "task_id": "k", "status": "complete", "unknown": 1, "elapsed_seconds": None},
])
def test_a_summary_an_events_file_carries_is_used_only_whole_and_well_formed(carried):
    """The events file is anyone's to write: what is not a summary is read from the lake instead."""
    assert RunSummary.from_event({"summary": carried}) is None
    whole = RunSummary("t", "k", "complete", "default", 4, 2, 1, 2.5, [{"name": "search", "status": "complete"}],
                       {"reports": {"json": "/lake/reports/task_id=k/report_id=ab12/report.json"}})
    assert RunSummary.from_event({"summary": whole.as_event()}) == whole


def test_a_report_rebuild_covers_the_latest_complete_runs_selection(settings):
    from tasks.retrieval.plan_store import selected_source_ids
    first, failed = uuid.uuid4().hex, uuid.uuid4().hex
    with open_catalog(settings) as catalog:
        assert selected_source_ids(catalog, TASK) is None  # no run: every consolidated source
    start_run(settings, first, TASK, "Why?", None, "default", Budget())
    record_outcome(settings, first, TASK, selected()[:2], [], [])
    finish_run(settings, first, "complete")
    start_run(settings, failed, TASK, "Why?", None, "default", Budget())
    record_outcome(settings, failed, TASK, selected(), [], [])
    finish_run(settings, failed, "failed")
    with open_catalog(settings) as catalog:
        assert selected_source_ids(catalog, TASK) == ["s1", "s2"]


# -- runs whose process died ---------------------------------------------------------

# Starts a run, traces its first line, and dies as `kill -9` would have it die.
DYING_RUN = """
import os, signal, sys
from schemas.governance import Budget
from tasks.common.settings import Settings
from tasks.records.runs import start_run
from tasks.records.trace import TraceLog
settings = Settings()
start_run(settings, sys.argv[1], "t1", "Why?", None, "default", Budget())
TraceLog(settings, "t1", sys.argv[1]).run("running")
os.kill(os.getpid(), signal.SIGKILL)
"""


def status_of(lake, trace_id: str) -> dict:
    (row,) = lake.dicts("SELECT status, error, finished_at, elapsed_seconds, host, pid FROM runs WHERE trace_id = ?", [trace_id])
    return row


def test_a_run_whose_process_was_killed_is_marked_interrupted(cli, lake, settings, trace_id):
    dying = subprocess.Popen([sys.executable, "-c", DYING_RUN, trace_id], cwd=cli.cwd, env=cli.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = dying.communicate(timeout=120)
    assert dying.returncode == -signal.SIGKILL, stderr
    before = status_of(lake, trace_id)
    assert (before["status"], before["pid"], before["host"]) == ("running", dying.pid, socket.gethostname())

    (closed,) = close_dead_runs(settings)
    assert (closed.trace_id, closed.task_id) == (trace_id, TASK)
    after = status_of(lake, trace_id)
    assert after["status"] == "interrupted" and after["finished_at"] is not None
    assert after["error"] == closed.message == (f"interrupted: the process that ran it (pid {dying.pid} on "
                                              f"{socket.gethostname()}) ended before the run did")
    assert close_dead_runs(settings) == []  # closed once
    assert RunSummary.load(settings, trace_id).exit_code == 1


def test_a_run_killed_after_publishing_its_report_is_complete_and_one_killed_before_is_interrupted(
        lake, settings, trace_id):
    # the report is a run's last step; the process may die before it records that the run is over
    here = ProcessIdentity.current()
    dead = ProcessIdentity(here.host, here.pid, "started at another time")
    unpublished = uuid.uuid4().hex
    for run in (trace_id, unpublished):
        with commit_scope(task_id=TASK, flow_run_id=run):
            start_run(settings, run, TASK, "Why?", None, "default", Budget(), process=dead)
    reported_at = datetime.now(timezone.utc) + timedelta(seconds=5)
    with commit_scope(task_id=TASK, flow_run_id=trace_id), open_catalog(settings, "test: report") as catalog:
        catalog.transaction(lambda cat: cat.run("report_insert", {
            "task_id": TASK, "generated_at": reported_at, "question": "Why?", "language": "en",
            "synthesizer": "extractive", "source_count": 1, "cited_source_count": 1, "citation_count": 1,
            "unverified_count": 0, "insight_count": 1, "warning_count": 0, "md_path": "r.md", "html_path": "r.html",
            "json_path": "r.json", "duration_ms": 1, "tokens": 0, "flow_run_id": trace_id, "first_insight": "x"}),
            action="report")

    closed = {run.trace_id: run for run in close_dead_runs(settings)}
    assert (closed[trace_id].status, closed[unpublished].status) == ("complete", "interrupted")
    published = status_of(lake, trace_id)
    assert published["status"] == "complete" and published["error"] is None
    # it finished when its report was written (what batch_answers shows as its time)
    assert published["finished_at"] == reported_at and 5 <= published["elapsed_seconds"] < 60
    assert status_of(lake, unpublished)["status"] == "interrupted"
    assert RunSummary.load(settings, trace_id).exit_code == 0
    assert close_dead_runs(settings) == []


def test_a_run_of_a_living_process_is_left_running(lake, settings, trace_id):
    start_run(settings, trace_id, TASK, "Why?", None, "default", Budget())
    assert close_dead_runs(settings) == []
    assert status_of(lake, trace_id)["status"] == "running"


def test_a_reused_pid_does_not_keep_a_dead_run_running(lake, settings, trace_id):
    # the pid runs again, but another process: the one that started the run ended
    here = ProcessIdentity.current()
    start_run(settings, trace_id, TASK, "Why?", None, "default", Budget(),
              process=ProcessIdentity(here.host, here.pid, "started at another time"))
    assert [run.trace_id for run in close_dead_runs(settings)] == [trace_id]
    assert status_of(lake, trace_id)["status"] == "interrupted"


def test_a_run_on_another_host_is_left_to_that_host(lake, settings, trace_id):
    start_run(settings, trace_id, TASK, "Why?", None, "default", Budget(),
              process=ProcessIdentity("another-host.example", 1, None))
    assert close_dead_runs(settings) == []
    assert status_of(lake, trace_id)["status"] == "running"


def test_a_catalog_made_before_runs_recorded_their_process_gains_the_columns(lake, settings, trace_id):
    with open_catalog(settings) as catalog:  # as such a catalog was: no columns, an older schema fingerprint
        for column in ("host", "pid", "process_started"):
            catalog.con.execute(f"ALTER TABLE run_log DROP COLUMN {column}")
        catalog.con.execute("UPDATE searchlake_schema SET fingerprint = 'older'")
    start_run(settings, trace_id, TASK, "Why?", None, "default", Budget())
    assert status_of(lake, trace_id)["pid"] == os.getpid()



# -- the lease: a run whose process stopped beating reads as interrupted ------------

def test_a_run_past_its_lease_reads_interrupted_and_a_heartbeat_brings_it_back(lake, settings, trace_id):
    import time
    from tasks.records.heartbeat import beat
    start_run(settings, trace_id, TASK, "Why?", None, "default", Budget(), lease_seconds=3)
    assert status_of(lake, trace_id)["status"] == "running"  # within its lease
    time.sleep(3.5)
    lapsed = status_of(lake, trace_id)
    assert lapsed["status"] == "interrupted" and lapsed["finished_at"] is not None
    assert lapsed["error"] == (f"interrupted: the process that ran it (pid {os.getpid()} on {socket.gethostname()}) "
                               "gave no sign of life for 3 s")
    assert RunSummary.load(settings, trace_id).status == "interrupted"  # what `research` prints reads the same
    # judged, not written: the process beats again (it was only kept from the catalog), the run is running
    assert lake.rows("SELECT status FROM run_log WHERE trace_id = ?", [trace_id]) == [("running",)]
    beat(settings, {trace_id: TASK})
    assert status_of(lake, trace_id)["status"] == "running"


def test_an_ended_run_and_a_run_recorded_without_a_lease_are_never_judged(lake, settings, trace_id):
    import time
    older = uuid.uuid4().hex
    start_run(settings, trace_id, TASK, "Why?", None, "default", Budget(), lease_seconds=0.2)
    finish_run(settings, trace_id, "complete")
    start_run(settings, older, TASK, "Why?", None, "default", Budget())  # as runs of earlier versions were
    time.sleep(0.5)
    assert status_of(lake, trace_id)["status"] == "complete" and status_of(lake, older)["status"] == "running"


def test_runs_in_progress_beat_together_and_stop_when_they_end(lake, settings, monkeypatch):
    import time
    from tasks.records.heartbeat import _beating_for, keep_alive
    from tasks.lake.history import lake_history
    monkeypatch.setenv("SEARCHLAKE_RUN_HEARTBEAT_SECONDS", "0.2")
    beating = Settings()
    runs = [uuid.uuid4().hex for _ in range(3)]
    lease = 2.5  # many beats long: a commit stalled by a busy machine must not end a live run
    for run in runs:
        start_run(beating, run, TASK, "Why?", None, "default", Budget(), lease_seconds=lease)
    before = lake.rows("SELECT max(snapshot_id) FROM lake.snapshots()")[0][0]
    with keep_alive(beating, runs[0], TASK), keep_alive(beating, runs[1], TASK), keep_alive(beating, runs[2], TASK):
        time.sleep(lease + 0.5)
        assert [status_of(lake, run)["status"] for run in runs] == ["running"] * 3  # past their lease, alive
    deadline = time.monotonic() + 60
    while _beating_for(beating).thread is not None:  # the beating stops once no run is left (a beat in flight lands)
        assert time.monotonic() < deadline, "the heartbeat did not stop with the runs"
        time.sleep(0.1)
    beats = lake.rows("SELECT count(*), count(DISTINCT trace_id) FROM run_heartbeat_log")[0]
    commits = lake.dicts("SELECT commit_message FROM lake.snapshots() WHERE snapshot_id > ?", [before])
    assert beats[1] == 3 and beats[0] == 3 * len(commits) >= 3  # one commit per heartbeat, every run in it
    assert {c["commit_message"] for c in commits} == {"heartbeat: 3 runs in progress"}
    time.sleep(lease + 0.5)
    assert [status_of(lake, run)["status"] for run in runs] == ["interrupted"] * 3
    with open_catalog(settings, "test: history", read_only=True) as catalog:  # `searchlake history` leaves them out
        assert not [entry for entry in lake_history(catalog, limit=100) if (entry.message or "").startswith("heartbeat")]
