"""The scheduled ingest of a landing folder, through the real Prefect engine:
the folder is created when missing, and what was handled is filed away so the
next run reads nothing twice."""

from __future__ import annotations

import json
import logging
import os
from datetime import date
from pathlib import Path

import pytest

from tests.conftest import clean_env, flow_run_in_engine_process, prefect_artifacts, prefect_events


def ingest(**options) -> tuple[object, dict]:
    """The ingest flow's final state and its summary (a run that refused
    files ends Failed, its summary on the state's exception)."""
    from flows.ingest import FilesRefused, ingest_flow
    state = ingest_flow(**options, return_state=True)
    result = state.result(raise_on_failure=False)
    return state, result.summary if isinstance(result, FilesRefused) else result


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_missing_landing_folder_is_created_and_said_once(prefect_engine, lake, tmp_path):
    from flows.ingest import ingest_flow
    logs = Lines()
    logging.getLogger("prefect.task_runs").addHandler(logs)
    try:
        landing = tmp_path / "landing"
        first = ingest_flow(landing=str(landing))
        assert landing.is_dir() and first["landed"] == 0
        ingest_flow(landing=str(landing))
    finally:
        logging.getLogger("prefect.task_runs").removeHandler(logs)
    said = [line for line in logs.lines if "did not exist" in line]
    assert len(said) == 1 and str(landing) in said[0]


def test_landed_files_are_filed_away_and_never_read_again(prefect_engine, lake, tmp_path, new_bundle, new_item):
    from flows.ingest import ingest_flow
    from tests.conftest import BundleFiles
    landing = BundleFiles(tmp_path / "landing")
    landing.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)], task_id="drop"))
    landing.write(new_bundle("q2", [new_item("https://b.example/2", 0.5)], task_id="drop"), "agent-7/q2.json")
    landing.write_text('{"query_id": "q3", "results": "not a list"', "broken.json")
    landing.write_text("{}", "half-written.json.part")  # still being written: not a bundle file yet

    state, summary = ingest(landing=str(landing.folder))
    assert summary["landed"] == 2 and summary["moved"] == {"processed": 2, "refused": 1}
    # the refusal reaches Prefect: the run fails (after landing the rest) and its artifact names the file
    assert state.is_failed() and state.message.startswith("refused 1 of 3 files (landed 2 bundles)")
    refusals = prefect_artifacts("ingest-refusals")[0]
    assert refusals.type == "table" and "broken.json" in str(refusals.data)
    assert prefect_events("searchlake.ingest.refused")[0].payload == {"refused": 1}
    landed_by = {r["flow_run_id"] for r in lake.dicts("SELECT flow_run_id FROM bundles")}
    assert landed_by == {str(state.state_details.flow_run_id)}
    ours = [e for e in prefect_events("searchlake.bundles.landed",
                                      until=lambda events: any(e.payload.get("tasks") == ["drop"] for e in events))
            if e.payload.get("tasks") == ["drop"]]
    assert [e.payload for e in ours] == [{"bundles": 2, "tasks": ["drop"]}]
    assert ours[0].resource.id == "searchlake.lake"
    today = date.today().isoformat()
    left = sorted(str(p.relative_to(landing.folder)) for p in landing.folder.rglob("*") if p.is_file())
    assert left == sorted([f"processed/{today}/agent-7/q2.json", f"processed/{today}/q1.json",
                           f"refused/{today}/broken.json", "half-written.json.part"])
    assert [r["url"] for r in lake.consolidated("drop")] == ["https://a.example/1", "https://b.example/2"]

    state, again = ingest(landing=str(landing.folder))
    assert state.is_completed() and again["landed"] == 0 and "moved" not in again  # nothing waiting, nothing read
    assert lake.count("quarantine") == 1  # the refused file was not refused a second time

    landing.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)], task_id="drop"))  # dropped again
    third = ingest_flow(landing=str(landing.folder))
    assert third["unchanged"] == 1 and (landing.folder / "processed" / today / "q1.1.json").is_file()


def test_a_run_that_refused_files_fails_with_its_reason_and_no_traceback(prefect_engine, settings, tmp_path):
    """As a process worker runs the deployment (`python -m prefect.engine`):
    the run ends Failed with the refusal as its message, and its log holds
    no traceback for log-based alerts to take for a crash (Prefect could
    not raise a dict as the failure: `TypeError: Unexpected result for failed
    state`); called in-process, the flow raises the refusal with what it did."""
    from flows.ingest import ingest_flow
    from tests.conftest import BundleFiles
    landing = BundleFiles(tmp_path / "landing")
    landing.write_text('{"query_id": "q3", "results": "not a list"', "broken.json")

    flow_run, done = flow_run_in_engine_process(ingest_flow, "flows/ingest.py:ingest_flow",
                                                {"landing": str(landing.folder)}, clean_env(Path(settings.home)))
    log = done.stdout + done.stderr
    assert flow_run.state.is_failed(), log
    assert flow_run.state.message.startswith("refused 1 of 1 files (landed 0 bundles): refused "), log
    assert "broken.json: truncated" in log  # the refusal is said, as a warning
    assert "Traceback" not in log and "TypeError" not in log, log
    assert done.returncode == 0

    from flows.ingest import FilesRefused
    landing.write_text('{"query_id": "q4"}', "also-broken.json")
    with pytest.raises(FilesRefused) as refused:
        ingest_flow(landing=str(landing.folder))
    assert str(refused.value).startswith("refused 1 of 1 files (landed 0 bundles): refused ")
    assert refused.value.summary["moved"] == {"processed": 0, "refused": 1}


def test_hostile_files_are_refused_filed_away_and_the_rest_lands(prefect_engine, lake, tmp_path,
                                                                       new_bundle, new_item):
    from flows.ingest import ingest_flow
    from tests.conftest import BundleFiles
    landing = BundleFiles(tmp_path / "landing")
    landing.write(new_bundle("q1", [new_item("https://a.example/1", 0.9)], task_id="drop"))
    landing.write(new_bundle("huge", [new_item("https://h.example/")], task_id="drop", stats={"dedup_count": 2**63}))
    with open(os.path.join(os.fsencode(landing.folder), b"\xff\xfe.json"), "w") as handle:
        handle.write(json.dumps(new_bundle("odd", [new_item("https://o.example/")], task_id="drop")))
    secret = tmp_path / "secret.env"
    secret.write_text("SEARCHLAKE_TEST_API_KEY=sk-do-not-copy-4711\n")
    (landing.folder / "keys.json").symlink_to(secret)
    os.mkfifo(landing.folder / "fifo.json")

    state, summary = ingest(landing=str(landing.folder))

    assert state.is_failed() and summary["landed"] == 1 and summary["moved"] == {"processed": 1, "refused": 4}
    assert sorted(summary["refused"]) == [
        f"refused {landing.folder}/\\xff\\xfe.json: bad_file_name: file name is not valid UTF-8",
        f"refused {landing.folder}/fifo.json: unsafe_file: not a regular file (a FIFO)",
        f"refused {landing.folder}/huge.json: invalid_value stats.dedup_count: "
        "Input should be less than or equal to 2147483647",
        f"refused {landing.folder}/keys.json: unsafe_file: a link to a file outside the folder"]
    today = date.today().isoformat()
    assert sorted(os.listdir(os.fsencode(landing.folder / "refused" / today))) == [
        b"fifo.json", b"huge.json", b"keys.json", b"\xff\xfe.json"]
    assert [r["url"] for r in lake.consolidated("drop")] == ["https://a.example/1"]
    home = Path(lake.settings.home)
    assert not [p for p in home.rglob("*") if p.is_file() and b"sk-do-not-copy" in p.read_bytes()]


def test_the_documented_freshness_automation_is_one_prefect_accepts(prefect_engine):
    """automations/no-new-bundles.yaml, created as `prefect automation
    create --from-file` creates it, expects the event the flows emit."""
    import asyncio
    import yaml
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore

    spec = AutomationCore.model_validate(yaml.safe_load(Path("automations/no-new-bundles.yaml").read_text()))

    async def create_and_read():
        async with get_client() as client:
            return await client.read_automation(await client.create_automation(spec))
    created = asyncio.run(create_and_read())
    assert created.trigger.expect == {"searchlake.bundles.landed"} and created.trigger.posture == "Proactive"
    assert created.trigger.match.root == {"prefect.resource.id": "searchlake.lake"}
