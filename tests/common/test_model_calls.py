"""Every model call is bounded, asks for structured output where the
endpoint takes it, and a run gives up on a model that fails it — as a user
pointing searchlake at a local model server relies on. The server is real
HTTP on 127.0.0.1 (tests/model_server.py), answering one request at a time
as llama.cpp's server does; each test's run is one LLMConfig.from_settings,
as a research run's is."""

from __future__ import annotations

import socket
import time

import pytest

from schemas.governance import Policy
from tasks.common.llm import STOP, LLMConfig
from tasks.common.settings import Settings
from tasks.selection.filters import Candidate, coarse_filter
from tasks.selection.quality import quality_filter
from tasks.reporting.report import compose_report
from tasks.retrieval.planning import plan_question
from tasks.synthesis.extractive import extractive_synthesis
from tasks.synthesis.modeling import build_blueprint
from tasks.synthesis.synthesizer import SynthesisInput, synthesize
from tests.model_server import ANSWERS, ModelServer
from tests.report_helpers import PLAN, make_sources

QUESTION = "How efficient are solar panels and battery storage?"
TOKENS = {"plan": 301, "screen": 302, "review": 303, "synthesis": 304, "model": 305}


def run_model(server: ModelServer, **values) -> LLMConfig:
    """The model of one run, as a research run makes it from its settings."""
    settings = Settings(_env_file=None, llm_base_url=server.base, llm_model="local-270m", **values)
    return LLMConfig.from_settings(settings)


def candidates(n: int) -> list[Candidate]:
    return [Candidate(source_id=f"s{i}", url=f"https://site{i}.example.org/solar", title=f"Solar panels {i}",
                      content_text="Solar panel efficiency and battery storage. " * 20, score_final=0.5)
            for i in range(1, n + 1)]


def plan(llm: LLMConfig):
    return plan_question(QUESTION, max_per_intent=2, llm=llm).plan


@pytest.fixture
def server(request):
    behaviour, delay = getattr(request, "param", ("answer", 0.0))
    with ModelServer(behaviour, delay) as running:
        yield running


# -- bounded, and structured where the endpoint takes it -------------------------------

def test_each_kind_of_call_sends_its_max_tokens_the_stop_and_its_schema(server):
    llm = run_model(server, **{f"llm_max_tokens_{kind}": n for kind, n in TOKENS.items()})
    assert plan(llm).planner == "llm"
    coarse_filter(QUESTION, candidates(3), llm)
    quality_filter(QUESTION, candidates(3), Policy(enable_llm_review=True), target=3, llm=llm)
    synthesize(make_sources(), QUESTION, PLAN, llm=llm)
    build_blueprint(extractive_synthesis(make_sources(), PLAN["question"], PLAN), llm=llm)

    assert server.kinds() == ["plan", "screen", "review", "synthesis", "model"]
    for kind, body in zip(server.kinds(), server.bodies):
        assert body["max_tokens"] == TOKENS[kind] and body["stop"] == STOP
        wanted = body["response_format"]
        assert wanted["type"] == "json_schema" and wanted["json_schema"]["strict"] is True
        schema = wanted["json_schema"]["schema"]
        assert set(schema["required"]) == set(ANSWERS[kind]) and schema["additionalProperties"] is False
    record = llm.use.record()
    assert record["calls"] == 5 and record["without_model"] is None and record["structured_output"] == "json_schema"
    assert record["prompt_tokens"] == 5 * 210 and record["completion_tokens"] == 5 * 90
    assert record["answers"] == {kind: {"as_written": 1} for kind in TOKENS}


@pytest.mark.parametrize("server", [("sloppy", 0.0)], indirect=True)
def test_json_a_small_model_breaks_is_repaired_used_and_counted_as_repaired(server):
    llm = run_model(server)
    assert plan(llm).planner == "llm"
    kept, drops = coarse_filter(QUESTION, candidates(2), llm)
    assert len(kept) == 2 and not drops
    record = llm.use.record()
    assert record["answers"] == {"plan": {"repaired": 1}, "screen": {"repaired": 1}}
    assert record["without_model"] is None


@pytest.mark.parametrize("server", [("no_schema", 0.0)], indirect=True)
def test_a_server_that_refuses_response_format_is_asked_without_it_for_the_rest_of_the_run(server):
    llm = run_model(server)
    assert plan(llm).planner == "llm"  # asked again in the other form, then without the schema, and answered
    kept, drops = coarse_filter(QUESTION, candidates(2), llm)
    asked = [(body.get("response_format") or {}).get("type") for body in server.bodies]
    assert asked == ["json_schema", "json_object", None, None]
    assert len(kept) == 2 and not drops
    record = llm.use.record()
    assert record["structured_output"] is False and record["without_model"] is None
    assert [note.split(" (HTTP 400: ")[0] for note in record["notes"]] == [
        f"the model at {server.base} refused response_format json_schema",
        f"the model at {server.base} refused response_format json_object"]

    another_run = run_model(server)  # a run of its own asks with the schema again
    plan(another_run)
    assert (server.bodies[-3].get("response_format") or {}).get("type") == "json_schema"


@pytest.mark.parametrize("server", [("json_object", 0.0)], indirect=True)
def test_a_server_that_takes_the_schema_as_json_object_gets_it_so_at_once_and_never_twice(server):
    llm = run_model(server, http_retries=3)
    assert plan(llm).planner == "llm"
    kept, _ = coarse_filter(QUESTION, candidates(2), llm)
    asked = [body.get("response_format") for body in server.bodies]
    assert [f["type"] for f in asked] == ["json_schema", "json_object", "json_object"]  # its 500 is not retried
    assert asked[1]["schema"] == asked[0]["json_schema"]["schema"]
    assert set(asked[2]["schema"]["required"]) == set(ANSWERS["screen"]) and len(kept) == 2
    record = llm.use.record()
    assert record["structured_output"] == "json_object" and record["without_model"] is None
    [note] = record["notes"]
    assert "refused response_format json_schema (HTTP 500: " in note and note.endswith(
        "the run's further calls ask with response_format json_object")


@pytest.mark.parametrize("server", [("slow_start", 1.0)], indirect=True)
def test_a_slow_first_token_within_the_timeout_is_waited_for(server):
    llm = run_model(server, llm_timeout=10)
    assert plan(llm).planner == "llm"
    kept, _ = coarse_filter(QUESTION, candidates(2), llm)
    assert server.kinds() == ["plan", "screen"] and len(kept) == 2
    assert llm.use.record()["without_model"] is None and llm.use.record()["seconds"] >= 2.0


# -- quick to give up -------------------------------------------------------------------

@pytest.mark.parametrize("server", [("hang", 0.0)], indirect=True)
def test_after_one_timeout_the_run_calls_the_model_no_more(server):
    llm = run_model(server, llm_timeout=1, http_retries=3)
    started = time.monotonic()
    planned = plan(llm)
    assert planned.planner == "keywords"
    assert planned.fallback_reason == f"the model at {server.base} did not answer within 1 s"

    later = time.monotonic()
    pasta = Candidate(source_id="pasta", url="https://cooking.example.org/pasta", title="Cooking pasta",
                      snippet="Boil water, add salt.", score_final=0.1)
    kept, drops = coarse_filter(QUESTION, [*candidates(44), pasta], llm)  # three batches: none is sent
    reviewed = quality_filter(QUESTION, candidates(3), Policy(enable_llm_review=True), target=3, llm=llm)
    material = SynthesisInput("t", make_sources(), PLAN["question"], PLAN)
    report, synthesis, _ = compose_report(material, llm=llm)
    assert time.monotonic() - later < 3.0 and later - started >= 1.0  # the later stages did not wait for it

    assert len(server.bodies) == 1  # one request, never repeated, nothing queued behind it
    # screened as with no model: the title that shares no term with the question goes
    assert len(kept) == 44 and [d.source_id for d in drops] == ["pasta"] and len(reviewed.kept) == 3
    assert synthesis.synthesizer == "extractive"
    said = (f"the model at {server.base} did not answer within 1 s while planning; "
            "planning, screening, review, synthesis and modeling ran without it")
    assert llm.use.without_model() == said
    assert report.metadata.warnings.count(said) == 1
    assert not [w for w in report.metadata.warnings if "LLM synthesis failed" in w or "LLM modeling failed" in w]
    record = llm.use.record()
    assert record["calls"] == 1 and record["without_model"] == said and 1.0 <= record["seconds"] < 5


@pytest.mark.parametrize("server", [("prose", 0.0)], indirect=True)
def test_answers_that_ignore_the_format_stop_the_model_after_the_second(server):
    llm = run_model(server)
    planned = plan(llm)
    assert planned.planner == "keywords" and "unusable" in planned.fallback_reason
    out = coarse_filter(QUESTION, candidates(45), llm)
    assert len(out.kept) == 45 and not out.drops
    assert server.kinds() == ["plan", "screen"]  # the second and third batches were not sent
    said = llm.use.without_model()
    assert said.startswith(f"the model at {server.base} gave 2 unusable answers, the last while screening titles (")
    assert said.endswith("; planning and screening ran without it")
    assert llm.use.record()["answers"] == {"plan": {"unusable": 1}, "screen": {"unusable": 1}}


def test_the_run_s_model_budget_bounds_its_answers_and_then_stops_the_model(server):
    llm = run_model(server, llm_run_tokens=1000)
    assert plan(llm).planner == "llm"
    assert server.bodies[0]["max_tokens"] == 1000  # the plan's 1024, cut to what the run has
    coarse_filter(QUESTION, candidates(2), llm)  # 300 tokens each, as the server counts them
    coarse_filter(QUESTION, candidates(2), llm)
    assert server.bodies[1]["max_tokens"] == 512 and server.bodies[2]["max_tokens"] == 400
    out = coarse_filter(QUESTION, candidates(2), llm)
    assert len(server.bodies) == 4 and len(out.kept) == 2
    out = coarse_filter(QUESTION, candidates(2), llm)
    assert len(server.bodies) == 4 and "tokens (1000) were spent" in out.notes[0]
    assert llm.use.without_model() == ("the run's model tokens (1000) were spent before screening titles; "
                                       "screening ran without it")


def test_one_run_giving_up_leaves_another_run_s_model_alone(server):
    first, second = run_model(server), run_model(server)
    server.behaviour = "prose"
    plan(first), plan(first)
    assert first.use.stopped and second.use.stopped is None
    server.behaviour = "answer"
    assert plan(second).planner == "llm" and plan(first).planner == "keywords"
    assert len(server.bodies) == 3


def test_the_record_names_the_endpoint_without_its_credentials(server):
    url = server.base.replace("http://", "http://searchlake:sk-local-secret@")
    settings = Settings(_env_file=None, llm_base_url=url + "?key=sk-query-secret", llm_model="m", llm_timeout=5)
    llm = LLMConfig.from_settings(settings)
    server.behaviour = "prose"
    plan(llm), plan(llm)
    text = str(llm.use.record())
    assert server.base in text and "sk-local-secret" not in text and "sk-query-secret" not in text


def test_a_dead_endpoint_is_given_up_on_after_its_first_call():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    llm = LLMConfig.from_settings(Settings(_env_file=None, llm_base_url=base, llm_model="m"))
    assert "cannot reach the model" in plan(llm).fallback_reason
    kept, _ = coarse_filter(QUESTION, candidates(2), llm)
    assert len(kept) == 2 and llm.use.record()["calls"] == 1
    said = llm.use.without_model()
    assert said.startswith(f"cannot reach the model at {base} while planning (network error: ")
    assert said.endswith("; planning and screening ran without it")
