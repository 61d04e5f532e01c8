"""A research run against a local model server that hangs — generation that
runs past the client's timeout on a server answering one request at a time
(tests/model_server.py, real HTTP on 127.0.0.1) — costs one timeout more
than the same run with no model, completes through the keyword planner and
the extractive synthesizer, and says once, at the terminal, in the report,
the record and the trace, which stages ran without the model and why."""

from __future__ import annotations

import json
import time
from pathlib import Path

from flows.cli.research import print_run_outcome
from flows.mcp_research import finished_run
from tests.flows.test_research_flow import research  # noqa: F401 - the fixture
from tests.model_server import ModelServer

TIMEOUT = 3  # seconds a model call may take here
MARGIN = 15.0  # for a loaded machine: two runs of the same work differ by a few seconds


def test_a_hanging_model_costs_one_timeout_and_the_run_says_which_stages_ran_without_it(research, monkeypatch,
                                                                                         capsys):
    for name in ("SEARCHLAKE_LLM_BASE_URL", "SEARCHLAKE_LLM_MODEL", "SEARCHLAKE_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    research.run(task_id="warm-up", target=2)  # the library's index is built once, before either run is timed
    started = time.monotonic()
    research.run(task_id="no-model", target=2)
    no_model = time.monotonic() - started

    with ModelServer("hang") as server:
        monkeypatch.setenv("SEARCHLAKE_LLM_BASE_URL", server.base)
        monkeypatch.setenv("SEARCHLAKE_LLM_MODEL", "local-270m")
        monkeypatch.setenv("SEARCHLAKE_LLM_TIMEOUT", str(TIMEOUT))
        started = time.monotonic()
        result = research.run(task_id="hanging-model", target=2)
        with_model = time.monotonic() - started
        kinds = server.kinds()

    assert kinds == ["plan"]  # one request: not repeated, and no later stage queued behind it
    assert with_model <= no_model + TIMEOUT + MARGIN, (with_model, no_model)

    row = research.run_row("hanging-model")
    assert row["status"] == "complete" and result["planner"] == "keywords"
    [report] = research.dicts("SELECT synthesizer, json_path FROM reports WHERE task_id = ?", "hanging-model")
    assert report["synthesizer"] == "extractive"
    said = (f"the model at {server.base} did not answer within {TIMEOUT} s while planning; "
            "planning, screening, review, synthesis and modeling ran without it")
    model = json.loads(row["outputs"])["model"]
    assert model["without_model"] == said and model["calls"] == 1 and model["seconds"] >= TIMEOUT

    # said once: in the report's warnings, the trace (and its rows), at the terminal, over MCP
    written = json.loads(Path(research.settings.lake_root, report["json_path"]).read_text(encoding="utf-8"))
    assert written["metadata"]["warnings"].count(said) == 1
    assert not [w for w in written["metadata"]["warnings"] if "failed (" in w]
    trace = research.jsonl("hanging-model", row["trace_id"], "trace.jsonl")
    assert sum(said in json.dumps(line, ensure_ascii=False) for line in trace) == 1
    assert sum(said in (event["detail"] or "") for event in research.events(row["trace_id"])) == 1
    print_run_outcome(row["trace_id"], None)
    assert capsys.readouterr().out.count(said) == 1
    assert finished_run(research.settings, row["trace_id"]).text.count(said) == 1  # and to an agent, over MCP
