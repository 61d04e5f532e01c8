"""The LLM synthesizer: numbered sources in, ---THOUGHT---/---JSON--- out;
citations are mapped back to the list and any citation pointing outside it
is dropped with a warning, never invented. Its answer is held to the same
budget as the extractive one (base.within_answer): points past ANSWER_WORDS
words are left out; a model that gives none answers with its first insights
a verified quote backs. `llm_synthesis` raises LLMError
for an unreachable model or an unusable answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from schemas.report import ANSWER_WORDS, Citation, ContradictionOrGap, Insight, KeyDataPoint, SynthesisResult
from tasks.synthesis.labels import detect_language
from tasks.common.llm import (FORMAT_INSTRUCTIONS, SYNTHESIS, AnswerShape, LLMConfig, LLMError, capped_list, capped_str,
                              chat)
from tasks.synthesis.passages import clip
from tasks.synthesis.base import Source, finish, no_sources_result, plan_dimensions, within_answer

SYSTEM_PROMPT = (
    "You are a research synthesis agent. You receive a research question and a numbered list of "
    "sources (S1, S2, ...). Use only these sources. Every claim must cite the sources it rests on by "
    "their number, each with a quote copied character for character from that source (a sentence or "
    "a phrase, in the source's own language; never translate or paraphrase a quote). Do not cite a "
    "source number that is not in the list. First answer the question directly in `answer`: one short "
    "point for each part of the question, saying what the sources say, at most " + str(ANSWER_WORDS // 2)
    + " words in all, nothing that does not speak to the question. Then give the evidence, figures with "
    "their units, disagreements between sources (contradictions) and what the sources do not cover "
    "(gaps).\n" + FORMAT_INSTRUCTIONS
)
JSON_SHAPE = """{
  "answer": [{"text": "a direct answer to one part of the question", "part": "that part, or null",
              "citations": [{"source": 1, "quote": "exact words from S1"}]}],
  "synthesized_insights": [{"text": "the insight", "dimension": "a key dimension or null",
                            "citations": [{"source": 1, "quote": "exact words from S1"}]}],
  "key_data_points": [{"value": 12.5, "unit": "%", "measure": "what the figure measures",
                       "text": "the statement", "citations": [{"source": 2, "quote": "..."}]}],
  "contradictions_or_gaps": [{"kind": "contradiction or gap", "description": "...",
                              "citations": [{"source": 3, "quote": "..."}]}]
}"""


class QuoteAnswer(AnswerShape):
    source: int
    quote: capped_str(600)


CITATIONS = capped_list(QuoteAnswer, 4)


class PointAnswer(AnswerShape):
    text: capped_str(800)
    part: capped_str(120) | None
    citations: CITATIONS


class InsightAnswer(AnswerShape):
    text: capped_str(1000)
    dimension: capped_str(120) | None
    citations: CITATIONS


class FigureAnswer(AnswerShape):
    value: float
    unit: capped_str(40)
    measure: capped_str(120)
    text: capped_str(400)
    citations: CITATIONS


class IssueAnswer(AnswerShape):
    kind: Literal["contradiction", "gap"]
    description: capped_str(400)
    citations: CITATIONS


# The synthesizer's JSON, as JSON_SHAPE shows it to the model
class SynthesisAnswer(AnswerShape):
    answer: capped_list(PointAnswer, 8)
    synthesized_insights: capped_list(InsightAnswer, 12)
    key_data_points: capped_list(FigureAnswer, 12)
    contradictions_or_gaps: capped_list(IssueAnswer, 8)


@dataclass(frozen=True)
class LLMOptions:
    chars_per_source: int = 3000
    total_chars: int = 30000


def _source_block(source: Source, limit: int) -> str:
    return f"[S{source.number}] {source.title}\nURL: {source.url}\n{clip(source.text, limit)}"


def llm_messages(sources: list[Source], question: str, plan: dict | None,
                 opts: LLMOptions = LLMOptions()) -> list[dict]:
    """The prompt: the question, the plan's dimensions, the numbered sources
    (each cut to fit the budget), the JSON shape and the output language."""
    per_source = max(300, min(opts.chars_per_source, opts.total_chars // max(1, len(sources))))
    blocks = "\n\n".join(_source_block(s, per_source) for s in sources)
    dims = plan_dimensions(plan)
    language = ("Write every text and description in Simplified Chinese (简体中文); quotes stay in the "
                "source's language." if detect_language(question) == "zh" else "Write in English.")
    user = (f"Question: {question}\n"
            + (f"Key dimensions: {'; '.join(dims)}\n" if dims else "")
            + f"\nSources:\n{blocks}\n\n{language}\nThe JSON object has this shape:\n{JSON_SHAPE}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


_REF_NUMBER = re.compile(r"^\s*\[?\s*(?:s|source|src|来源)?\s*#?\s*(\d+)\s*\]?\s*$", re.I)


def resolve_source(ref: Any, sources: list[Source]) -> Source | None:
    """The listed source a model's reference names: a number (3, "S3", "[3]")
    or a source_id or URL from the list; None for anything else."""
    by_number = {s.number: s for s in sources}
    if isinstance(ref, bool):
        return None
    if isinstance(ref, (int, float)) and float(ref).is_integer():
        return by_number.get(int(ref))
    if isinstance(ref, str):
        match = _REF_NUMBER.match(ref)
        if match:
            return by_number.get(int(match.group(1)))
        return next((s for s in sources if ref.strip() in (s.source_id, s.url)), None)
    return None


_REF_KEYS = ("source", "source_number", "source_id", "number", "id", "ref", "url", "sid")
_QUOTE_KEYS = ("quote", "text", "excerpt", "evidence")


def _citations(raw: Any, where: str, sources: list[Source], warnings: list[str]) -> list[Citation]:
    out: list[Citation] = []
    for item in raw if isinstance(raw, list) else ([raw] if raw is not None else []):
        ref = next((item[k] for k in _REF_KEYS if k in item), None) if isinstance(item, dict) else item
        quote = next((item[k] for k in _QUOTE_KEYS if isinstance(item.get(k), str)), "") \
            if isinstance(item, dict) else ""
        source = resolve_source(ref, sources)
        if source is None:
            warnings.append(f"{where}: cited source {ref!r}, which is not in the source list; citation dropped")
            continue
        out.append(source.cite_quote(quote.strip()))
    return out


_FIRST_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _FIRST_NUMBER.search(value) if isinstance(value, str) else None
    return float(match.group().replace(",", "")) if match else None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _kind(value: Any) -> str:
    text = _text(value).casefold()
    return "contradiction" if ("contra" in text or "矛盾" in text or "冲突" in text) else "gap"


def _items(data: dict, key: str) -> list:
    value = data.get(key)
    return value if isinstance(value, list) else []


def from_llm_json(data: dict, sources: list[Source], question: str) -> SynthesisResult:
    """Map a model's JSON onto a SynthesisResult (unverified as yet)."""
    keys = ("answer", "synthesized_insights", "key_data_points", "contradictions_or_gaps")
    if not any(isinstance(data.get(k), list) for k in keys):
        raise LLMError("the model's JSON has none of answer, synthesized_insights, key_data_points, "
                       "contradictions_or_gaps")
    warnings: list[str] = []
    insights = []
    for n, raw in enumerate(_items(data, "synthesized_insights"), start=1):
        raw = raw if isinstance(raw, dict) else {"text": raw}
        insights.append(Insight(text=_text(raw.get("text")) or _text(raw.get("insight")),
                                dimension=_text(raw.get("dimension")) or None,
                                citations=_citations(raw.get("citations"), f"insight {n}", sources, warnings)))
    points = []
    for n, raw in enumerate(_items(data, "key_data_points"), start=1):
        value = _number(raw.get("value")) if isinstance(raw, dict) else None
        if value is None:
            warnings.append(f"key data point {n}: no numeric value; dropped")
            continue
        points.append(KeyDataPoint(value=value, unit=_text(raw.get("unit")), measure=_text(raw.get("measure")),
                                   text=_text(raw.get("text")),
                                   citations=_citations(raw.get("citations"), f"key data point {n}", sources, warnings)))
    issues = []
    for n, raw in enumerate(_items(data, "contradictions_or_gaps"), start=1):
        raw = raw if isinstance(raw, dict) else {"description": raw}
        issues.append(ContradictionOrGap(kind=_kind(raw.get("kind")), description=_text(raw.get("description")),
                                         citations=_citations(raw.get("citations"), f"item {n} of contradictions_or_gaps",
                                                              sources, warnings)))
    answer = []
    for n, raw in enumerate(_items(data, "answer"), start=1):
        raw = raw if isinstance(raw, dict) else {"text": raw}
        answer.append(Insight(text=_text(raw.get("text")), dimension=_text(raw.get("part")) or None,
                              citations=_citations(raw.get("citations"), f"answer point {n}", sources, warnings)))
    warnings += [f"insight {n}: no citation" for n, i in enumerate(insights, start=1) if not i.citations]
    warnings += [f"answer point {n}: no citation" for n, p in enumerate(answer, start=1) if not p.citations]
    insights = [i for i in insights if i.text]
    return SynthesisResult(question=question, language=detect_language(question),
                           answer=within_answer([p for p in answer if p.text]),
                           synthesized_insights=insights, key_data_points=points,
                           contradictions_or_gaps=[i for i in issues if i.description], warnings=warnings)


def llm_synthesis(sources: list[Source], question: str, plan: dict | None, config: LLMConfig, *,
                  client: httpx.Client | None = None, opts: LLMOptions = LLMOptions()) -> SynthesisResult:
    """Synthesis by a model; LLMError when it cannot be reached or its answer
    has no usable JSON. A task without sources costs no model call."""
    if not sources:
        return no_sources_result(question, detect_language(question), plan_dimensions(plan), f"llm:{config.model}")
    answer = chat(config, llm_messages(sources, question, plan, opts), kind=SYNTHESIS, shape=SynthesisAnswer,
                  client=client)
    result = answer.read(lambda doc: verified(from_llm_json(doc, sources, question), sources))
    result.synthesizer = f"llm:{config.model}"
    result.tokens = answer.tokens
    if not result.answer:
        result.answer = answer_from_insights(result.synthesized_insights)
    return result


def verified(result: SynthesisResult, sources: list[Source]) -> SynthesisResult:
    """The result with its quotes checked against the sources (finish);
    LLMError when it cites and not one of its quotes is in its source: a
    model that invents every quote has not read them."""
    finish(result, sources)
    cited = result.all_citations()
    if cited and not any(c.verified for c in cited):
        raise LLMError(f"none of the synthesis's {len(cited)} quotes is in the source it cites")
    return result


def answer_from_insights(insights: list[Insight]) -> list[Insight]:
    """For a model that gave no answer: its insights a verified quote backs,
    with those quotes only, while they fit the answer's budget."""
    backed = [i.model_copy(deep=True, update={"citations": [c.model_copy() for c in i.citations if c.verified]})
              for i in insights if any(c.verified for c in i.citations)]
    return within_answer(backed)
