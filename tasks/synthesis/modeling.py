"""Modeling (docs/reports.md): a SynthesisResult → ModelBlueprint.

The extractive blueprint claims only what the evidence shows: core drivers
are the insights' dimensions (aspects named in the question's words, or the
plan's dimensions; "General" for the rest) with `evidenceRefs` = 0-based
indices into `synthesis.synthesized_insights`, counting only insights whose
quotes were verified in their sources (an unverified quote is never shown
as a driver's evidence); relationships are co-occurrence (two
drivers resting on the same sources), never causation; metrics are the key
data points, their confidence from citability. It builds no scenarios: those
need a model's judgement, so it says so in `metadata.notes`.

The LLM variant asks a model for the blueprint and keeps only references
that point at real insights and drivers. As with synthesis, `build_blueprint`
falls back to the extractive blueprint (with a warning) when the model fails.
"""

from __future__ import annotations

import time
from itertools import combinations
from typing import Any

import httpx
from pydantic import Field

from schemas.report import (
    BlueprintMetadata,
    Citation,
    CoreDriver,
    Metric,
    ModelBlueprint,
    Relationship,
    Scenario,
    SynthesisResult,
)
from tasks.synthesis.labels import labels
from tasks.common.llm import (FORMAT_INSTRUCTIONS, MODEL, AnswerShape, LLMConfig, LLMError, capped_list, capped_str,
                              chat, model_given_up)
from tasks.synthesis.passages import clip, jaccard

CITABILITY_CONFIDENCE = {"high": 0.8, "medium": 0.6, "low": 0.3, "none": 0.1}
_DESCRIBE = {
    "en": "{n} insight(s) from {k} source(s); leading evidence: “{quote}”",
    "zh": "{n} 条洞见，来自 {k} 个来源；主要证据：“{quote}”",
}
NO_SCENARIOS = "scenarios need a model's judgement; the extractive blueprint builds none"


def _evidence(synthesis: SynthesisResult, index: int) -> Citation | None:
    """The insight's first verified citation: a quote that was not found in
    its source is never shown as evidence."""
    return next((c for c in synthesis.synthesized_insights[index].citations if c.verified), None)


def _driver_groups(synthesis: SynthesisResult) -> dict[str, list[int]]:
    """Insights with verified evidence, grouped by their dimension (an
    aspect named in the question's words, or a planner's dimension);
    undimensioned ones under "General"."""
    general = labels(synthesis.language)["general"]
    groups: dict[str, list[int]] = {}
    for i, insight in enumerate(synthesis.synthesized_insights):
        if _evidence(synthesis, i) is not None:
            groups.setdefault(insight.dimension or general, []).append(i)
    return groups


def _sources_of(synthesis: SynthesisResult, refs: list[int]) -> set[str]:
    return {c.source_id for i in refs for c in synthesis.synthesized_insights[i].citations if c.verified}


def _driver(synthesis: SynthesisResult, name: str, refs: list[int]) -> CoreDriver:
    template = _DESCRIBE.get(synthesis.language, _DESCRIBE["en"])
    evidence = _evidence(synthesis, refs[0])
    quote = " ".join(evidence.quote.split())
    shown = clip(quote, 160) + (" …" if len(quote) > 160 else "")
    text = template.format(n=len(refs), k=len(_sources_of(synthesis, refs)), quote=shown)
    return CoreDriver(name=name, description=text, evidenceRefs=refs, evidence=evidence)


def _relationships(synthesis: SynthesisResult, drivers: list[CoreDriver]) -> list[Relationship]:
    """Two drivers that rest on shared sources co-occur; confidence is the
    Jaccard overlap of their verified sources."""
    out = []
    for a, b in combinations(drivers, 2):
        overlap = jaccard(_sources_of(synthesis, a.evidenceRefs), _sources_of(synthesis, b.evidenceRefs))
        if overlap > 0:
            out.append(Relationship(**{"from": a.name, "to": b.name, "type": "co-occurs",
                                       "confidence": round(overlap, 2)}))
    return out


def _disputed(synthesis: SynthesisResult) -> set[tuple[str, str]]:
    """(source_id, quote) of every figure named in a contradiction."""
    return {(c.source_id, c.quote) for item in synthesis.contradictions_or_gaps
            if item.kind == "contradiction" for c in item.citations}


def _metrics(synthesis: SynthesisResult) -> list[Metric]:
    disputed = _disputed(synthesis)
    out = []
    for point in synthesis.key_data_points:
        confidence = CITABILITY_CONFIDENCE[point.citability]
        if any((c.source_id, c.quote) in disputed for c in point.citations):
            confidence /= 2  # another source gives a different figure
        out.append(Metric(name=point.measure or point.unit or "value", estimate=point.value, unit=point.unit,
                          confidence=round(confidence, 2)))
    return out


def extractive_blueprint(synthesis: SynthesisResult) -> ModelBlueprint:
    drivers = [_driver(synthesis, name, refs) for name, refs in _driver_groups(synthesis).items()]
    warnings = [] if drivers else ["no insights: the blueprint has no drivers"]
    # `notes`, not `warnings`: building no scenarios is this blueprint's
    # design, not a problem with this task's evidence.
    return ModelBlueprint(modelType="evidence_graph", coreDrivers=drivers,
                          relationships=_relationships(synthesis, drivers), scenarios=[],
                          metrics=_metrics(synthesis), metadata=BlueprintMetadata(warnings=warnings, notes=[NO_SCENARIOS]))


# -- LLM variant ----------------------------------------------------------------------

MODEL_SYSTEM_PROMPT = (
    "You are a modeling agent. From numbered research insights and data points, build a model of "
    "the topic: its core drivers (each referring to the insight numbers it rests on), the "
    "relationships between drivers, scenarios, and metrics taken from the data points. Use only the "
    "given evidence.\n" + FORMAT_INSTRUCTIONS
)
MODEL_JSON_SHAPE = """{"modelType": "causal_graph",
 "coreDrivers": [{"name": "...", "description": "...", "evidenceRefs": [0, 2]}],
 "relationships": [{"from": "driver name", "to": "driver name", "type": "influence", "confidence": 0.7}],
 "scenarios": [{"name": "...", "assumptions": ["..."], "outcomes": ["..."], "confidence": 0.5}],
 "metrics": [{"name": "...", "estimate": 0.24, "unit": "%", "confidence": 0.6}]}"""


NAME, SENTENCE = capped_str(120), capped_str(400)


class DriverAnswer(AnswerShape):
    name: NAME
    description: SENTENCE
    evidenceRefs: capped_list(int, 12)


class RelationshipAnswer(AnswerShape):
    from_: NAME = Field(alias="from")
    to: NAME
    type: capped_str(40)
    confidence: float


class ScenarioAnswer(AnswerShape):
    name: NAME
    assumptions: capped_list(SENTENCE, 6)
    outcomes: capped_list(SENTENCE, 6)
    confidence: float


class MetricAnswer(AnswerShape):
    name: NAME
    estimate: float
    unit: capped_str(40)
    confidence: float


# The modeling agent's JSON, as MODEL_JSON_SHAPE shows it to the model
class BlueprintAnswer(AnswerShape):
    modelType: capped_str(40)
    coreDrivers: capped_list(DriverAnswer, 8)
    relationships: capped_list(RelationshipAnswer, 12)
    scenarios: capped_list(ScenarioAnswer, 4)
    metrics: capped_list(MetricAnswer, 8)


def model_messages(synthesis: SynthesisResult) -> list[dict]:
    insights = "\n".join(f"[{i}] ({x.dimension or '-'}) {x.text}" for i, x in enumerate(synthesis.synthesized_insights))
    points = "\n".join(f"- {p.measure}: {p.value:g} {p.unit}" for p in synthesis.key_data_points)
    language = "Write names and descriptions in Simplified Chinese." if synthesis.language == "zh" else "Write in English."
    user = (f"Question: {synthesis.question}\n\nInsights:\n{insights or '(none)'}\n\nData points:\n"
            f"{points or '(none)'}\n\n{language}\nThe JSON object has this shape:\n{MODEL_JSON_SHAPE}")
    return [{"role": "system", "content": MODEL_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _unit_interval(value: Any, default: float = 0.5) -> float:
    try:
        return min(1.0, max(0.0, float(value)))
    except (TypeError, ValueError):
        return default


def _dicts(data: dict, key: str) -> list[dict]:
    value = data.get(key)
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _llm_drivers(data: dict, synthesis: SynthesisResult, warnings: list[str]) -> list[CoreDriver]:
    """The model's drivers, each resting only on insights that have verified
    evidence: a reference outside the list, or to an insight whose quotes
    were not found in their sources, is dropped with a warning."""
    n_insights = len(synthesis.synthesized_insights)
    drivers = []
    for raw in _dicts(data, "coreDrivers"):
        refs = raw.get("evidenceRefs") if isinstance(raw.get("evidenceRefs"), list) else []
        valid = [r for r in refs if isinstance(r, int) and not isinstance(r, bool) and 0 <= r < n_insights]
        kept = [r for r in valid if _evidence(synthesis, r) is not None]
        if len(valid) < len(refs):
            warnings.append(f"driver {raw.get('name')!r}: evidence references outside the insight list dropped")
        if len(kept) < len(valid):
            warnings.append(f"driver {raw.get('name')!r}: evidence without a verified quote dropped")
        if str(raw.get("name") or "").strip():
            drivers.append(CoreDriver(name=str(raw["name"]).strip(), description=str(raw.get("description") or ""),
                                      evidenceRefs=kept))
    return drivers


def _llm_relationships(data: dict, names: set[str], warnings: list[str]) -> list[Relationship]:
    out = []
    for raw in _dicts(data, "relationships"):
        ends = (str(raw.get("from") or ""), str(raw.get("to") or ""))
        if not all(e in names for e in ends):
            warnings.append(f"relationship {ends[0]!r} → {ends[1]!r} names an unknown driver; dropped")
            continue
        out.append(Relationship(**{"from": ends[0], "to": ends[1], "type": str(raw.get("type") or "influence"),
                                   "confidence": _unit_interval(raw.get("confidence"))}))
    return out


def _llm_scenarios(data: dict) -> list[Scenario]:
    return [Scenario(name=str(s.get("name") or "scenario"),
                     assumptions=[str(a) for a in s.get("assumptions") or [] if a],
                     outcomes=[str(o) for o in s.get("outcomes") or [] if o],
                     confidence=_unit_interval(s.get("confidence")))
            for s in _dicts(data, "scenarios")]


def _llm_metrics(data: dict, warnings: list[str]) -> list[Metric]:
    out = []
    for raw in _dicts(data, "metrics"):
        try:
            estimate = float(raw.get("estimate"))
        except (TypeError, ValueError):
            warnings.append(f"metric {raw.get('name')!r}: estimate is not a number; dropped")
            continue
        out.append(Metric(name=str(raw.get("name") or "value"), estimate=estimate, unit=str(raw.get("unit") or ""),
                          confidence=_unit_interval(raw.get("confidence"))))
    return out


def llm_blueprint(synthesis: SynthesisResult, config: LLMConfig, *,
                  client: httpx.Client | None = None) -> ModelBlueprint:
    """A model's blueprint, cleaned: references outside the insight list and
    relationships between unknown drivers are dropped with a warning."""
    answer = chat(config, model_messages(synthesis), kind=MODEL, shape=BlueprintAnswer, client=client)
    data = answer.read(blueprint_document)
    warnings: list[str] = []
    drivers = _llm_drivers(data, synthesis, warnings)
    blueprint = ModelBlueprint(
        modelType=str(data.get("modelType") or "causal_graph"), coreDrivers=drivers,
        relationships=_llm_relationships(data, {d.name for d in drivers}, warnings),
        scenarios=_llm_scenarios(data), metrics=_llm_metrics(data, warnings),
        metadata=BlueprintMetadata(tokens=answer.tokens, warnings=warnings))
    return blueprint


def blueprint_document(data: dict) -> dict:
    if not any(isinstance(data.get(k), list) for k in ("coreDrivers", "relationships", "metrics", "scenarios")):
        raise LLMError("the model's JSON is not a model blueprint")
    return data


def build_blueprint(synthesis: SynthesisResult, *, llm: LLMConfig | None = None,
                    client: httpx.Client | None = None, fallback: bool = True) -> ModelBlueprint:
    """The blueprint flows call: extractive unless `llm` is given; an LLM
    failure falls back to extractive with a warning (or raises, fallback=False);
    once the run has given up on the model, the run's own warning says so
    (tasks/reporting/report.py), not this one."""
    started = time.monotonic()
    if llm is None or not synthesis.synthesized_insights:
        blueprint = extractive_blueprint(synthesis)
    else:
        try:
            blueprint = llm_blueprint(synthesis, llm, client=client)
        except LLMError as exc:
            if not fallback:
                raise
            blueprint = extractive_blueprint(synthesis)
            if not model_given_up(llm):
                blueprint.metadata.warnings.insert(0, f"LLM modeling failed ({exc}); the extractive blueprint was used")
    blueprint.metadata.durationMs = int((time.monotonic() - started) * 1000)
    return blueprint

