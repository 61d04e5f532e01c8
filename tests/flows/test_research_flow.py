"""The governed research run end to end, on the real Prefect engine (one
temporary Prefect server for the whole session): what a user relies on —
the run completes offline on a document library and leaves its record
(runs row, trace.jsonl, events.jsonl, selections, report); the provider
fan-out is parallel; a failing provider costs its bundles, never the run;
a re-run of a task searches only what has not landed; gates abort, warn and
fall back; the budget's timeout ends a run without losing what landed; a
corrupt policy row falls back to the built-in policy.

Search APIs are doubled at the network edge (tests/research_helpers.FakeWeb
behind httpx.MockTransport): nothing here touches the internet."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from tests.conftest import prefect_artifacts
from tests.research_helpers import (BUDGET_ENV, FAKE_KEYS, PROVIDER_KEYS, PUBLIC_ADDRESS, QUESTION, EdgeCut, FakeWeb,
                              write_library)

import flows.research
import tasks.retrieval.fetch
import tasks.common.http
from flows.cli.research import print_run_outcome
from tasks.lake.catalog import open_catalog
from tasks.records.summary import RunSummary
from tasks.common.http import make_client


class Research:
    """Runs research_flow against the test's own lake (SEARCHLAKE_HOME is a
    tmp folder: conftest's `settings` fixture) and reads what it left."""

    def __init__(self, settings, lake, library: Path, monkeypatch):
        self.settings, self.lake, self.library, self.monkeypatch = settings, lake, library, monkeypatch

    def online(self, web: FakeWeb, *names: str) -> None:
        """Give the named APIs credentials and put `web` at the network edge."""
        for name in names:
            key = {"tavily": "TAVILY_API_KEY", "brave": "BRAVE_API_KEY", "searxng": "SEARXNG_URL"}[name]
            self.monkeypatch.setenv(key, FAKE_KEYS[key])
        self.monkeypatch.setattr(flows.research, "make_client",
                                 lambda settings: make_client(settings, transport=web.transport()))

    def run(self, question: str = QUESTION, *, flow=None, **kwargs) -> dict:
        kwargs.setdefault("library", str(self.library))
        kwargs.setdefault("providers", ["library"])
        return (flow or flows.research.research_flow)(question, **kwargs)

    # -- what the run left
    def dicts(self, query: str, *params) -> list[dict]:
        return self.lake.dicts(query, list(params))

    def run_row(self, task_id: str) -> dict:
        rows = self.dicts("SELECT * FROM runs WHERE task_id = ? ORDER BY started_at DESC", task_id)
        assert rows, f"no runs row for {task_id}"
        return rows[0]

    def events(self, trace_id: str) -> list[dict]:
        return self.dicts("SELECT * FROM run_events WHERE trace_id = ? ORDER BY seq", trace_id)

    def run_folder(self, task_id: str, trace_id: str) -> Path:
        return Path(self.settings.lake_root) / "runs" / f"task_id={task_id}" / f"run_id={trace_id}"

    def jsonl(self, task_id: str, trace_id: str, name: str) -> list[dict]:
        path = self.run_folder(task_id, trace_id) / name
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def landed(self, task_id: str) -> set[str]:
        return {r["query_id"] for r in self.dicts("SELECT query_id FROM bundles WHERE task_id = ?", task_id)}

    def planned_calls(self, task_id: str, names: list[str]):
        from tasks.retrieval.providers.registry import provider_class
        from tasks.retrieval.plan_store import stored_plan
        from tasks.retrieval.search import route
        with open_catalog(self.settings, "test: plan", read_only=True) as catalog:
            plan = stored_plan(catalog, task_id)
        return route(plan, {name: provider_class(name) for name in names})


@pytest.fixture
def research(prefect_engine, settings, lake, tmp_path, monkeypatch) -> Research:
    for name in PROVIDER_KEYS + BUDGET_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SEARCHLAKE_MAX_QUERIES_PER_INTENT", "1")  # few searches: a fast run
    # The network edge, besides the APIs: no real retry waits, no DNS lookups
    # for result pages (they are served by FakeWeb too).
    monkeypatch.setattr(tasks.common.http, "_sleep", lambda seconds: None)
    monkeypatch.setattr(tasks.retrieval.fetch, "resolve_host", lambda host, port: [PUBLIC_ADDRESS])
    return Research(settings, lake, write_library(tmp_path / "library"), monkeypatch)


def stage_lines(trace: list[dict], name: str, status: str = "complete") -> list[dict]:
    return [line for line in trace if line["kind"] == "stage" and line["name"] == name and line["status"] == status]


# -- (a) offline, library only ------------------------------------------------------

def test_offline_library_run_completes_and_leaves_its_record(research, monkeypatch, capsys, tmp_path):
    result = research.run(task_id="solar", target=2)
    trace_id = result["trace_id"]
    assert result["task_id"] == "solar" and result["providers"] == ["library"]
    assert result["planner"] == "keywords" and result["failed_searches"] == 0

    row = research.run_row("solar")
    assert row["trace_id"] == trace_id and row["status"] == "complete" and row["error"] is None
    assert row["policy_source"] == "default" and row["question"] == QUESTION
    assert row["candidate_count"] == result["sources"] >= 4
    assert row["filtered_count"] == 2 and row["finished_at"] is not None

    # the report, in every format, where the run says it is
    for path in result["reports"].values():
        assert Path(path).is_file() and Path(path).stat().st_size > 0
    assert Path(result["report"]).suffix == ".html"

    consolidated = research.lake.consolidated("solar")
    assert len(consolidated) == result["sources"]
    assert all(r["url"].startswith("file://") for r in consolidated)
    selections = research.dicts("SELECT * FROM selections WHERE trace_id = ? ORDER BY rank", trace_id)
    assert 1 <= len(selections) <= 2 and [s["rank"] for s in selections] == list(range(1, len(selections) + 1))
    assert {s["source_id"] for s in selections} <= {r["source_id"] for r in consolidated}
    publishers = research.dicts("SELECT * FROM publishers WHERE trace_id = ?", trace_id)
    assert [p["publisher"] for p in publishers] == ["local library"]

    trace = research.jsonl("solar", trace_id, "trace.jsonl")
    assert [line["seq"] for line in trace] == list(range(1, len(trace) + 1))
    assert {line["trace_id"] for line in trace} == {trace_id}
    for stage in ("plan", "index", "search", "consolidate", "hard_filter", "coarse_filter",
                  "quality_filter", "publishers", "report"):
        assert len(stage_lines(trace, stage)) == 1, stage
    gates = {line["name"]: line["status"] for line in trace if line["kind"] == "gate"}
    assert gates == {"search_completeness": "pass", "filter_sufficiency": "pass", "output_check": "pass"}
    assert trace[0]["kind"] == "run" and trace[0]["status"] == "running"
    assert trace[-1]["kind"] == "run" and trace[-1]["status"] == "complete"
    # the same events are rows of run_events
    assert [(e["seq"], e["kind"], e["name"], e["status"]) for e in research.events(trace_id)] == \
        [(t["seq"], t["kind"], t["name"], t["status"]) for t in trace]

    events = research.jsonl("solar", trace_id, "events.jsonl")
    assert (events[0]["stepType"], events[0]["status"]) == ("pipeline", "start")
    assert (events[-1]["stepType"], events[-1]["status"]) == ("pipeline", "complete")
    assert events[-1]["progress"] == 1.0
    assert [e["progress"] for e in events] == sorted(e["progress"] for e in events)

    # the last event carries the run's summary as the lake's row says it: a command following the run in a
    # server prints it, and the answer from the report file the run published, without opening the lake
    carried = RunSummary.from_event(events[-1]["payload"]["metadata"])
    assert carried == RunSummary.load(research.settings, trace_id)
    published = json.loads(Path(result["reports"]["json"]).read_text(encoding="utf-8"))
    answer = published["synthesis"]["answer"]
    opening = " ".join(answer[0]["text"].split()[:8])
    with monkeypatch.context() as patched:
        patched.setattr("tasks.lake.catalog.open_catalog", _no_catalog)
        assert print_run_outcome(trace_id, None, summary=carried) == 0
    assert opening in " ".join(capsys.readouterr().out.split())
    # a report file the summary names that is not the task's report in this lake is not read
    planted = tmp_path / "report.json"
    planted.write_text(json.dumps({**published, "synthesis": {**published["synthesis"],
                                                                "answer": [{**answer[0], "text": "Planted answer."}]}}))
    elsewhere = RunSummary(**{**vars(carried), "outputs": {**carried.outputs, "reports": {"json": str(planted)}}})
    assert print_run_outcome(trace_id, None, summary=elsewhere) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "Planted" not in printed and opening in printed
    # a report.json that is not a report: one line, none of what it holds, and the run's outcome still
    Path(result["reports"]["json"]).write_text("secret: not a report", encoding="utf-8")
    assert print_run_outcome(trace_id, None, summary=carried) == 0
    said = capsys.readouterr()
    assert "status:   complete" in said.out and "secret" not in said.out + said.err
    assert said.err.strip() == ("warning: the report of task solar in the lake is not a readable report.json; "
                                "its answer is not shown")

    # Prefect shows the report (with its numbered sources) and the run's counts as artifacts of the run
    report = prefect_artifacts("report-solar")[0]
    markdown = Path(result["reports"]["md"]).read_text(encoding="utf-8")
    assert report.type == "markdown" and report.data == markdown and "\\[1\\]" in markdown
    assert str(report.flow_run_id) == trace_id
    counts = {row["measure"]: row["value"] for row in json.loads(prefect_artifacts("research-counts-solar")[0].data)}
    assert counts["candidate sources"] == result["sources"] and counts["selected sources"] == 2

    # dashboards' plain Parquet copies hold the run, its report's citations and its bundles
    exports = Path(research.lake.root) / "exports"
    run = pl.read_parquet(exports / "runs" / "task_id=solar" / "data.parquet").to_dicts()
    assert [(r["trace_id"], r["status"]) for r in run] == [(trace_id, "complete")]
    cited = pl.scan_parquet(exports / "report_citations").collect()
    assert cited["task_id"].unique().to_list() == ["solar"]
    assert sorted(cited["quote"].to_list()) == sorted(
        r["quote"] for r in research.dicts("SELECT quote FROM report_citations WHERE task_id = 'solar'"))
    assert pl.scan_parquet(exports / "bundles").collect().height == research.lake.count("bundles")

    # every row the run wrote names the Prefect flow run that wrote it
    for view in ("bundles", "runs", "reports"):
        assert {r["flow_run_id"] for r in research.dicts(f"SELECT flow_run_id FROM {view} WHERE task_id = 'solar'")} \
            == {trace_id}, view


def _no_catalog(*args, **kwargs):
    raise AssertionError("the catalog was opened")


def test_a_run_makes_a_handful_of_commits_that_say_what_it_did(research):
    before = research.lake.rows("SELECT max(snapshot_id) FROM lake.snapshots()")[0][0] or 0
    result = research.run(task_id="told", target=2)
    trace_id = result["trace_id"]
    commits = research.dicts("SELECT author, commit_message, commit_extra_info FROM lake.snapshots() "
                             "WHERE snapshot_id > ? ORDER BY snapshot_id", before)
    prefix = f"research told run {trace_id}: "
    steps = [c["commit_message"].removeprefix(prefix) for c in commits]
    assert all(c["commit_message"].startswith(prefix) for c in commits), steps
    assert all(c["author"].endswith(f" flow-run {trace_id}") for c in commits)
    assert all(json.loads(c["commit_extra_info"]) == {"tasks": ["told"]} for c in commits)
    # one commit per step that changes the lake: the trace's rows go with the run's own records
    assert steps[0] == "run started" and steps[-1].startswith("run complete: ")
    assert [s.split(":")[0].split(" ")[0] for s in steps[1:-1] if not s.startswith("landed")] == \
        ["plan", "consolidate", "outcome", "report"], steps
    assert len(steps) <= 8, steps
    rows = research.events(trace_id)
    assert len(rows) == len(research.jsonl("told", trace_id, "trace.jsonl")) > len(steps)


# -- (b) the fan-out is parallel ----------------------------------------------------

def test_provider_fan_out_is_parallel(research, monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_MAX_QUERIES_PER_INTENT", "2")
    web = FakeWeb(delay=1.0)
    research.online(web, "tavily", "brave", "searxng")
    result = research.run(task_id="fanout", providers=["tavily", "brave", "searxng"], target=3)
    assert research.run_row("fanout")["status"] == "complete"
    assert web.providers_called() == {"tavily", "brave", "searxng"}
    assert len(web.calls) == result["searches"] >= 12

    # parallel: several requests of one provider in flight at once (measured by the fake
    # servers themselves, not by the clock), yet never more than provider_concurrency
    assert max(web.max_in_flight.values()) >= 2
    assert web.max_total_in_flight > max(web.max_in_flight.values())  # providers at once, too
    assert all(n <= research.settings.provider_concurrency for n in web.max_in_flight.values()), web.max_in_flight
    # bundles that arrive while another one commits land with the next commit: fewer commits than searches
    landings = research.dicts("SELECT commit_message FROM lake.snapshots() WHERE commit_message LIKE ?",
                              f"research fanout run {result['trace_id']}: landed %")
    assert 0 < len(landings) < result["searches"]


# -- (c) one provider failing ----------------------------------------------------------

def test_a_failing_provider_does_not_fail_the_run(research):
    web = FakeWeb(failing={"brave"})
    research.online(web, "tavily", "brave")
    result = research.run(task_id="halfdown", providers=["tavily", "brave"], target=2)
    assert research.run_row("halfdown")["status"] == "complete"

    brave_bundles = research.dicts("SELECT * FROM bundles WHERE task_id = ? AND provider = 'brave'", "halfdown")
    tavily_bundles = research.dicts("SELECT * FROM bundles WHERE task_id = ? AND provider = 'tavily'", "halfdown")
    assert brave_bundles and tavily_bundles
    assert all(b["failed_count"] == 1 and b["kept_after_filter"] == 0 for b in brave_bundles)
    assert all(b["failed_count"] == 0 and b["kept_after_filter"] > 0 for b in tavily_bundles)
    assert result["failed_searches"] == len(brave_bundles)
    # the retry policy asked twice (one retry), then landed the failure as evidence
    assert len(web.queries("brave")) == 2 * len(brave_bundles)

    errors = research.dicts("SELECT * FROM error_log WHERE task_id = ? AND provider = 'brave'", "halfdown")
    assert sorted(e["query_id"] for e in errors) == sorted(b["query_id"] for b in brave_bundles)
    assert {(e["error_code"], e["http_status"]) for e in errors} == {("http_500", 500)}
    assert all("brave-test-key" not in (e["title"] or "") for e in errors)

    # the report is built from the providers that answered
    consolidated = research.lake.consolidated("halfdown")
    assert consolidated and {r["provider"] for r in consolidated} == {"tavily"}
    selections = research.dicts("SELECT * FROM selections WHERE trace_id = ?", result["trace_id"])
    assert len(selections) == 2


# -- (d) resume ---------------------------------------------------------------------

def test_rerun_of_a_task_searches_nothing_that_landed(research):
    web = FakeWeb()
    research.online(web, "tavily")
    first = research.run(task_id="again", providers=["library", "tavily"], target=2)
    asked = len(web.calls)
    assert asked > 0 and first["resumed"] == 0

    second = research.run(task_id="again", providers=["library", "tavily"], target=2)
    assert len(web.calls) == asked  # no provider request the second time
    assert second["resumed"] == second["searches"] == first["searches"]
    assert second["trace_id"] != first["trace_id"]
    rows = research.dicts("SELECT status FROM runs WHERE task_id = ?", "again")
    assert [r["status"] for r in rows] == ["complete", "complete"]
    # nothing doubled: one bundle per query id, the same sources
    assert research.lake.count("bundles") == first["searches"]
    assert second["sources"] == first["sources"]


def test_run_that_died_midway_resumes_with_only_what_had_not_landed(research):
    names = ["tavily", "brave"]
    web = FakeWeb(cut_after=3)
    research.online(web, *names)
    with pytest.raises(EdgeCut):
        research.run(task_id="cut", providers=names, target=2)
    row = research.run_row("cut")
    assert row["status"] == "failed" and "EdgeCut" in row["error"]
    landed = research.landed("cut")
    planned = research.planned_calls("cut", names)
    assert 0 < len(landed) < len(planned)

    web.cut_after = None
    before = len(web.calls)
    result = research.run(task_id="cut", providers=names, target=2)
    assert research.run_row("cut")["status"] == "complete"
    assert result["resumed"] == len(landed)
    asked_again = Counter((c.provider, c.query) for c in web.calls[before:])
    missing = Counter((c.provider, c.query.text) for c in planned if c.query.query_id not in landed)
    assert asked_again == missing
    # now every planned search landed exactly once
    query_ids = [r["query_id"] for r in research.dicts("SELECT query_id FROM bundles WHERE task_id = ?", "cut")]
    assert sorted(query_ids) == sorted(c.query.query_id for c in planned)


def test_the_library_is_asked_for_all_the_run_needs_in_one_round(research):
    """The default corpus, one query: the 20 candidates a target of 10 wants
    are asked of the library at once (more results cost it nothing), not in
    a second, deeper round."""
    result = research.run("How are class attributes looked up?", library=None, task_id="attrs", target=10)
    assert research.run_row("attrs")["status"] == "complete"
    bundles = research.dicts("SELECT query_id, item_count FROM bundles WHERE task_id = ?", "attrs")
    assert [b["query_id"] for b in bundles] == ["q1.library"] and bundles[0]["item_count"] >= 20
    assert result["sources"] >= 20 and result["searches"] == 1
    trace = research.jsonl("attrs", result["trace_id"], "trace.jsonl")
    assert len(stage_lines(trace, "consolidate")) == 1 and not stage_lines(trace, "deeper_search")


def test_search_goes_deeper_at_the_providers_that_may_have_more(research):
    """A library of 5 documents gives all it has in the first round; a web
    API answering 3 results a query is asked again for 20 before the
    completeness gate judges, and the library is not asked again."""
    web = FakeWeb()
    research.online(web, "tavily")
    result = research.run(task_id="deeper", providers=["library", "tavily"], target=10)
    assert research.run_row("deeper")["status"] == "complete"
    landed = research.landed("deeper")
    web_first = {q for q in landed if q.endswith(".tavily")}
    assert web_first and {f"{q}.n20" for q in web_first} <= landed
    assert "q1.library" in landed and not any(".library.n" in q for q in landed)
    trace = research.jsonl("deeper", result["trace_id"], "trace.jsonl")
    (deeper,) = stage_lines(trace, "deeper_search")  # the same 3 results again: nothing new, no third round
    assert deeper["detail"]["searches"] == len([q for q in landed if q.endswith(".n20")]) > 0
    gates = {e["name"]: json.loads(e["detail"])["reason"] for e in research.events(result["trace_id"])
             if e["kind"] == "gate"}
    assert "even asking each query for 20 results" in gates["search_completeness"]


# -- (e) gates --------------------------------------------------------------------

def test_search_completeness_abort_fails_the_run_and_names_the_gate(research):
    from flows.research import GateAbort
    with pytest.raises(GateAbort, match="only 0 candidate sources"):
        research.run("Which whales sing the longest songs?", task_id="toofew", target=10)
    row = research.run_row("toofew")
    assert row["status"] == "failed"
    # in words, without a class name: what happened and what to do
    # the search went deeper (20 results a query) before giving up
    assert row["error"].startswith("the search found only 0 candidate sources, even asking each query for 20")
    assert "needs at least 12" in row["error"] and "--library" in row["error"]
    assert RunSummary.load(research.settings, row["trace_id"]).exit_code == 1
    trace = research.jsonl("toofew", row["trace_id"], "trace.jsonl")
    gate = [line for line in trace if line["kind"] == "gate"]
    assert [(g["name"], g["status"]) for g in gate] == [("search_completeness", "abort")]
    assert gate[0]["detail"]["candidates"] == 0 and gate[0]["detail"]["target"] == 10
    assert not stage_lines(trace, "hard_filter", "running")  # nothing after the gate ran
    assert (trace[-1]["kind"], trace[-1]["status"]) == ("run", "failed")
    events = research.jsonl("toofew", row["trace_id"], "events.jsonl")
    assert (events[-1]["stepType"], events[-1]["status"]) == ("pipeline", "error")


def test_a_small_library_answers_with_what_it_has(research):
    """5 documents cannot give the 12 candidates a target of 10 wants, and a
    deeper search finds no more: the run goes on, warned, and reports."""
    result = research.run(task_id="small", target=10)
    row = research.run_row("small")
    assert row["status"] == "complete" and row["candidate_count"] == 5
    gates = {e["name"]: (e["status"], json.loads(e["detail"])["reason"])
             for e in research.events(result["trace_id"]) if e["kind"] == "gate"}
    assert gates["search_completeness"][0] == "warn"
    assert "providers have nothing more, even asking each query for 20 results" in gates["search_completeness"][1]
    assert Path(result["reports"]["md"]).read_text(encoding="utf-8").strip()


def test_search_completeness_warns_and_the_run_goes_on(research):
    result = research.run(task_id="warned", target=3)  # 5 documents: >= 3 x 1.2, < 3 x 2
    row = research.run_row("warned")
    assert row["status"] == "complete" and row["candidate_count"] == 5
    gates = [e for e in research.events(result["trace_id"]) if e["kind"] == "gate"]
    assert [(g["name"], g["status"]) for g in gates] == \
        [("search_completeness", "warn"), ("filter_sufficiency", "pass"), ("output_check", "pass")]
    assert "5 candidate sources" in json.loads(gates[0]["detail"])["reason"]
    assert len(research.dicts("SELECT * FROM selections WHERE trace_id = ?", result["trace_id"])) == 3


def test_filter_sufficiency_falls_back_to_a_new_search_round(research, cli):
    done = cli.run("policy", "--demand-id", "thin", "--set", "min_candidate_multiplier=1",
                   "--set", "near_enough_candidate_multiplier=0.5")
    assert done.returncode == 0, done.stderr
    result = research.run(task_id="thin", target=10, demand_id="thin")
    row = research.run_row("thin")
    assert row["status"] == "complete" and row["policy_source"] == "db"
    assert result["fallback_rounds"] == 1

    events = [(e["kind"], e["name"], e["status"]) for e in research.events(result["trace_id"])]
    assert ("gate", "filter_sufficiency", "fallback") in events
    assert ("stage", "fallback_search", "complete") in events
    fallback_at = events.index(("gate", "filter_sufficiency", "fallback"))
    assert events.index(("stage", "fallback_search", "complete")) > fallback_at
    # after the one allowed round the run accepts what it has, with a warning
    assert events[fallback_at + 1:].count(("gate", "filter_sufficiency", "warn")) == 1
    assert ("stage", "quality_filter", "complete") in events[events.index(("stage", "fallback_search", "complete")):]
    # the fallback round's queries joined the stored plan and landed
    planned = research.planned_calls("thin", ["library"])
    trace = research.jsonl("thin", result["trace_id"], "trace.jsonl")
    (first,) = stage_lines(trace, "search")
    (fallback,) = stage_lines(trace, "fallback_search")
    assert fallback["detail"]["searches"] == len(planned) - first["detail"]["searches"] > 0
    # every planned query landed; anything else that landed is a planned query asked deeper (q1.library.n20)
    planned_ids, landed = {c.query.query_id for c in planned}, research.landed("thin")
    assert planned_ids <= landed and all(q.rsplit(".n", 1)[0] in planned_ids for q in landed)


# -- (f) the budget's timeout ----------------------------------------------------------

def test_timeout_ends_the_run_and_keeps_what_landed(research):
    """One search answers at once, the next hangs past the flow's timeout
    (the CLI sets it from --timeout / PIPELINE_TIMEOUT, minimum 30 s; here
    the flow is called with a 4 s timeout directly). The run is recorded as
    timed_out the moment the budget runs out; the hung request itself cannot
    be interrupted (sync I/O in a worker thread), so it is released later."""
    web = FakeWeb(hold_after=1)
    research.online(web, "tavily")
    release = threading.Timer(6, web.release.set)
    release.start()
    try:
        with pytest.raises(TimeoutError):
            research.run(task_id="slow", providers=["tavily"], target=2,
                         flow=flows.research.research_flow.with_options(timeout_seconds=4))
    finally:
        release.cancel()
        web.release.set()
    row = research.run_row("slow")
    assert row["status"] == "timed_out" and "time budget" in row["error"]
    assert 2 < row["elapsed_seconds"] < 6
    trace = research.jsonl("slow", row["trace_id"], "trace.jsonl")
    assert stage_lines(trace, "search", "failed")
    assert (trace[-1]["kind"], trace[-1]["status"]) == ("run", "timed_out")
    events = research.jsonl("slow", row["trace_id"], "events.jsonl")
    assert (events[-1]["stepType"], events[-1]["status"]) == ("pipeline", "error")
    # what landed before the timeout is in the lake, whole
    fast = {c.query for c in web.calls[:2]}
    landed = research.dicts("SELECT * FROM bundles WHERE task_id = ?", "slow")
    assert fast <= {b["query_text"] for b in landed}
    for bundle in landed:
        assert Path(research.settings.lake_root, bundle["raw_path"]).is_file()
    assert research.lake.consolidate("slow").sources_written > 0


def test_a_run_told_to_stop_after_its_report_is_complete_and_before_it_interrupted(research, monkeypatch):
    """The report is a run's last step: what stops the process after it
    (SystemExit from a console whose reader is gone, Ctrl-C) interrupts
    nothing of the run, which is complete, in the lake and in Prefect; the
    same before it interrupts the run."""
    publish = flows.research.report_research_task

    def publish_then_stop(*args, **kwargs):
        publish(*args, **kwargs)
        raise SystemExit(1)

    monkeypatch.setattr(flows.research, "report_research_task", publish_then_stop)
    result = research.run(task_id="stopped-after", target=2)  # returns: the flow run completes
    row = research.run_row("stopped-after")
    assert (row["status"], row["error"]) == ("complete", None)
    assert json.loads(row["outputs"])["after_the_report"] == "SystemExit: 1"
    assert result["report"] == json.loads(row["outputs"])["report"] and Path(result["report"]).is_file()
    events = research.jsonl("stopped-after", row["trace_id"], "events.jsonl")
    assert (events[-1]["stepType"], events[-1]["status"]) == ("pipeline", "complete")

    def stop(*args, **kwargs):
        raise SystemExit(1)

    monkeypatch.setattr(flows.research, "report_research_task", stop)
    with pytest.raises(SystemExit):
        research.run(task_id="stopped-before", target=2)
    row = research.run_row("stopped-before")
    assert (row["status"], row["error"]) == ("interrupted", "interrupted: SystemExit: 1")


# -- (g) a corrupt policy row --------------------------------------------------------

def test_corrupt_policy_row_runs_with_the_built_in_policy(research):
    with open_catalog(research.settings, "test: corrupt policy") as catalog:
        catalog.run("policy_put", ["broken", '{"max_detail_fetch": 0}'])
    result = research.run(task_id="corrupt", target=2, demand_id="broken")
    row = research.run_row("corrupt")
    assert row["status"] == "complete" and row["demand_id"] == "broken"
    assert row["policy_source"] == "default(fallback)"
    assert json.loads(row["policy"])["max_detail_fetch"] == 30  # the built-in value
    trace = research.jsonl("corrupt", result["trace_id"], "trace.jsonl")
    assert any("default(fallback)" in line for line in trace[0]["detail"]["plan"])


# -- the ingest flow -------------------------------------------------------------------

def test_ingest_flow_lands_consolidates_and_reports_refusals(prefect_engine, lake, inbox, new_bundle, new_item):
    from flows.ingest import ingest_flow
    inbox.write(new_bundle("q1", [new_item("https://a.example/1", 0.9), new_item("https://b.example/2", 0.4)],
                           task_id="inbox"))
    inbox.write(new_bundle("q2", [new_item("https://a.example/1", 0.7), new_item("https://c.example/3", 0.5)],
                           task_id="inbox"))
    inbox.write_text('{"query_id": "q3", "results": "not a list"', "broken.json")
    state = ingest_flow([str(inbox.folder)], return_state=True)
    summary = state.result(raise_on_failure=False).summary  # the Failed state's exception: FilesRefused
    assert state.is_failed() and summary["tasks"] == ["inbox"] and summary["landed"] == 2 and summary["items"] == 4
    assert len(summary["refused"]) == 1 and "broken.json" in summary["refused"][0]
    assert len(summary["consolidated"]) == 1
    assert [r["url"] for r in lake.consolidated("inbox")] == \
        ["https://a.example/1", "https://c.example/3", "https://b.example/2"]
    # a second pass over the same folder lands nothing new
    again = ingest_flow([str(inbox.folder)], return_state=True).result(raise_on_failure=False).summary  # still refused
    assert again["landed"] == 0 and again["unchanged"] == 2


@pytest.mark.parametrize("question, words", [
    ("刹车片多久换一次？", "-刹车片多久换一次-"),
    ("Debian 下怎么查看 IP 地址？", "-debian-下怎么查看-ip-地址-"),
    ("How does Python's GC handle cycles?", "-how-does-python-s-"),
    ("？？", "-q-"),
])
def test_a_task_id_keeps_the_question_s_first_words_in_its_own_script(question, words):
    from schemas.bundle import check_identifier
    task_id = flows.research.new_task_id(question)
    assert words in task_id and check_identifier(task_id) == task_id
