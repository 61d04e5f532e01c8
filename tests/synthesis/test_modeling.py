"""ModelBlueprint from a synthesis: extractive drivers, co-occurrence,
metrics; the LLM variant keeps only references that exist."""

from __future__ import annotations

import json

from tests.report_helpers import CONFIG, PLAN, answer, make_sources, mock_llm

from tasks.synthesis.extractive import extractive_synthesis
from tasks.synthesis.modeling import NO_SCENARIOS, build_blueprint, extractive_blueprint

SURVEYS = [
    ("https://a.example.com/build", "A", "The build backend reads the [build-system] table. "
                                         "Project metadata lives in the [project] table. "
                                         "The adoption rate of pyproject.toml is 40% among maintainers."),
    ("https://b.example.org/meta", "B", "Project metadata such as name and version is static. "
                                        "The adoption rate of pyproject.toml is 65% among maintainers."),
]


def test_extractive_blueprint_follows_the_contract():
    synthesis = extractive_synthesis(make_sources(SURVEYS), PLAN["question"] + " adoption rate", PLAN)
    blueprint = extractive_blueprint(synthesis)
    doc = blueprint.to_contract()
    assert set(doc) == {"modelType", "coreDrivers", "relationships", "scenarios", "metrics", "metadata"}
    assert {"durationMs", "tokens", "warnings"} <= set(doc["metadata"])
    names = [d["name"] for d in doc["coreDrivers"]]
    assert {"build backend", "project metadata"} <= set(names)
    for driver in doc["coreDrivers"]:
        assert driver["evidenceRefs"]
        for ref in driver["evidenceRefs"]:
            insight = synthesis.synthesized_insights[ref]
            assert insight.dimension in (driver["name"], None)
    # Both drivers rest on source A: they co-occur (never claimed causal).
    rel = doc["relationships"][0]
    assert rel["type"] == "co-occurs" and {rel["from"], rel["to"]} <= set(names) and 0 < rel["confidence"] <= 1
    metrics = {(m["estimate"], m["unit"]) for m in doc["metrics"]}
    assert {(40.0, "%"), (65.0, "%")} <= metrics
    # The two adoption figures contradict each other: their confidence is halved.
    assert all(m["confidence"] <= 0.3 for m in doc["metrics"] if m["unit"] == "%")
    assert doc["scenarios"] == [] and NO_SCENARIOS in doc["metadata"]["notes"]


def test_blueprint_of_an_empty_synthesis_has_no_drivers():
    blueprint = build_blueprint(extractive_synthesis([], "q", None))
    assert blueprint.coreDrivers == [] and blueprint.metadata.warnings


def test_llm_blueprint_drops_references_outside_the_insights():
    synthesis = extractive_synthesis(make_sources(), PLAN["question"], PLAN)
    n = len(synthesis.synthesized_insights)
    doc = {"modelType": "causal_graph",
           "coreDrivers": [{"name": "Backend", "description": "d", "evidenceRefs": [0, n + 5, -1, "2"]},
                           {"name": "Metadata", "description": "d", "evidenceRefs": [1]}],
           "relationships": [{"from": "Backend", "to": "Metadata", "type": "influence", "confidence": 1.7},
                             {"from": "Backend", "to": "Ghost", "type": "influence", "confidence": 0.5}],
           "scenarios": [{"name": "Optimistic", "assumptions": ["a"], "outcomes": ["b"], "confidence": 0.4}],
           "metrics": [{"name": "Share", "estimate": 0.24, "unit": "%", "confidence": 0.6},
                       {"name": "Bad", "estimate": "lots"}]}
    seen: list = []
    blueprint = build_blueprint(synthesis, llm=CONFIG, client=mock_llm(answer(doc), seen=seen))
    assert "[0]" in seen[0]["messages"][1]["content"]
    assert blueprint.coreDrivers[0].evidenceRefs == [0]
    assert [(r.from_, r.to, r.confidence) for r in blueprint.relationships] == [("Backend", "Metadata", 1.0)]
    assert [m.name for m in blueprint.metrics] == ["Share"] and blueprint.scenarios[0].name == "Optimistic"
    warnings = " | ".join(blueprint.metadata.warnings)
    assert "Backend" in warnings and "Ghost" in warnings and "Bad" in warnings
    assert blueprint.metadata.tokens == 150
    assert json.loads(json.dumps(blueprint.to_contract()))["relationships"][0]["from"] == "Backend"


def test_llm_blueprint_failure_falls_back_to_extractive():
    synthesis = extractive_synthesis(make_sources(), PLAN["question"], PLAN)
    blueprint = build_blueprint(synthesis, llm=CONFIG, client=mock_llm("no json at all"))
    assert blueprint.modelType == "evidence_graph"
    assert blueprint.metadata.warnings[0].startswith("LLM modeling failed")
