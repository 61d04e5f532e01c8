"""Answer evaluation (nugget-based, as in TREC's RAG track): does the report
hold the facts a reader of the question needs, cite the right pages, and
say so honestly when the documents do not answer?

    .venv/bin/python bench/answers.py [--sets notes_en,debian_ref_zh,pydoc_topics] [--limit N]
    .venv/bin/python bench/answers.py --resynth        # synthesis again over the cached sources

A set (bench/answers/<name>.json) is a relevance set (bench/relevance.py)
whose questions also list `nuggets`: the facts a useful answer must contain,
each with `match` strings — the fact as the relevant pages word it — and
`kind` "uncovered" for questions the documents do not answer.

In one run per set, offline (library only), in a fresh SEARCHLAKE_HOME:
- the relevance figures of bench/relevance.py: hit@5 and MRR@10 of the
  research run's consolidated ranking, of the library searched once with the
  question, of plain page-level BM25 (bm25s over words) and of BM25 over
  character bigrams (bm25s again, the usual baseline for Chinese);
- for each research run's report: nugget recall (a nugget counts when one of
  its match strings occurs in the answer a reader reads: the insights and
  key data points, compared after NFKC, case folding, reading table cell
  borders as spaces and collapsing whitespace — none at all around CJK
  text) — and of those, the nuggets in the summary `searchlake research`
  prints in the terminal (its first five findings) — complete answers (every nugget
  of the question), the first insight citing a relevant page, honest gaps
  (uncovered questions whose report says the sources do not answer it, or
  may not: the passages quoted only touch it), false gaps (covered
  questions said to be unanswered, nothing quoted) and hedged answers
  (covered questions answered with passages the report says only touch
  it), quotes verified.

The synthesis input of every run (its question, plan and selected sources)
is cached under bench/out/answers/<set>/; --resynth runs only the synthesis
again over that cache — seconds, not minutes — to compare synthesis ideas
on every set at once. With SEARCHLAKE_LLM_* set, --llm runs the LLM
synthesizer over the same cache.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SETS = BENCH / "answers"
CACHE = BENCH / "out" / "answers"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.relevance import (JudgedSet, first_relevant, load_set, missing_library, page_key,  # noqa: E402
                             question_only, bm25s_rankings, bigram_rankings, run_pipeline, summarize)

_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")


# -- matching nuggets ---------------------------------------------------------------

def normal(text: str) -> str:
    """NFKC, case-folded, table cell borders read as spaces, whitespace
    collapsed, and none beside CJK characters or full-width punctuation
    (Chinese copies add and drop such spaces)."""
    text = " ".join(unicodedata.normalize("NFKC", text or "").casefold().replace("|", " ").split())
    return re.sub(r"\s+(?=[\u3400-\u9fff])|(?<=[\u3400-\u9fff])\s+", "", text)


def nugget_found(nugget: dict, answer: str) -> bool:
    said = normal(answer)
    return any(normal(m) in said for m in nugget["match"])


def answer_text(synthesis: dict) -> str:
    """What a reader reads as the answer: insights and key data points."""
    items = (synthesis.get("synthesized_insights") or []) + (synthesis.get("key_data_points") or [])
    return "\n".join(item.get("text") or "" for item in items)


def summary_text(synthesis: dict) -> str:
    """What `searchlake research` prints of the answer in the terminal: the
    summary's first findings (the full report holds the rest)."""
    from schemas.report import SynthesisResult
    from tasks.reporting.layout import summary_items
    from tasks.reporting.terminal import MAX_FINDINGS

    if not synthesis.get("synthesized_insights"):
        return ""
    result = SynthesisResult.model_validate(synthesis)
    return "\n".join(result.synthesized_insights[i].text for i in summary_items(result, limit=MAX_FINDINGS))


def says_unanswered(synthesis: dict) -> bool:
    """The report's whole-question gap: a gap with no dimension."""
    return any(g.get("kind") == "gap" and not g.get("dimension")
               for g in synthesis.get("contradictions_or_gaps") or [])


def first_insight_pages(synthesis: dict, library: str | None) -> list[str]:
    insights = synthesis.get("synthesized_insights") or []
    return [page_key(c.get("url") or "", library) for c in (insights[0].get("citations") or [])] if insights else []


def citations_verified(synthesis: dict) -> tuple[int, int]:
    items = [*(synthesis.get("synthesized_insights") or []), *(synthesis.get("key_data_points") or []),
             *(synthesis.get("contradictions_or_gaps") or [])]
    cited = [c for item in items for c in item.get("citations") or []]
    return sum(1 for c in cited if c.get("verified")), len(cited)


def score_answers(judged: JudgedSet, syntheses: list[dict | None]) -> dict:
    covered = [(q, s) for q, s in zip(judged.questions, syntheses) if q.get("kind") != "uncovered"]
    uncovered = [(q, s) for q, s in zip(judged.questions, syntheses) if q.get("kind") == "uncovered"]
    nuggets = found = in_summary = complete = first_ok = false_gaps = hedged = verified = cited = 0
    per_question = {}
    for q, s in covered:
        s = s or {}
        text = answer_text(s)
        hits = [nugget_found(n, text) for n in q["nuggets"]]
        nuggets += len(hits)
        found += sum(hits)
        summary = summary_text(s)
        in_summary += sum(nugget_found(n, summary) for n in q["nuggets"])
        complete += all(hits) and bool(hits)
        first_ok += bool(set(first_insight_pages(s, judged.library)) & set(q["relevant"]))
        false_gaps += says_unanswered(s) and not s.get("synthesized_insights")
        hedged += says_unanswered(s) and bool(s.get("synthesized_insights"))
        v, c = citations_verified(s)
        verified, cited = verified + v, cited + c
        per_question[q["id"]] = {"nuggets": f"{sum(hits)}/{len(hits)}", "first_cites_relevant":
                                 bool(set(first_insight_pages(s, judged.library)) & set(q["relevant"])),
                                 "says_unanswered": says_unanswered(s)}
    honest = 0
    for q, s in uncovered:
        s = s or {}
        honest += says_unanswered(s)
        v, c = citations_verified(s)
        verified, cited = verified + v, cited + c
        per_question[q["id"]] = {"says_unanswered": says_unanswered(s)}
    n = max(1, len(covered))
    return {
        "covered": len(covered), "uncovered": len(uncovered),
        "nugget_recall": round(found / max(1, nuggets), 3), "nuggets": f"{found}/{nuggets}",
        "nuggets_in_terminal_summary": f"{in_summary}/{nuggets}",
        "complete_answers": f"{complete}/{len(covered)}",
        "first_insight_relevant": round(first_ok / n, 3), "first_insight": f"{first_ok}/{len(covered)}",
        "honest_gaps": f"{honest}/{len(uncovered)}", "false_gaps": f"{false_gaps}/{len(covered)}",
        "hedged": f"{hedged}/{len(covered)}",
        "quotes_verified": f"{verified}/{cited}",
        "per_question": per_question,
    }


# -- the cache of synthesis inputs ------------------------------------------------------

def cache_file(judged: JudgedSet, question: dict) -> Path:
    return CACHE / judged.name / f"{question['id']}.json"


def save_input(judged: JudgedSet, question: dict, task_id: str) -> dict | None:
    """The run's synthesis input (question, plan, selected sources) and its
    report's synthesis, kept for --resynth; the synthesis is returned."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.reporting.report import load_report, read_synthesis_input
    from tasks.retrieval.plan_store import selected_source_ids, stored_plan

    with open_catalog(Settings(), "answers: input", read_only=True) as catalog:
        material = read_synthesis_input(catalog, task_id, stored_plan(catalog, task_id), question=question["question"],
                                        source_ids=selected_source_ids(catalog, task_id))
        try:
            report = json.loads(load_report(catalog, task_id, "json"))
        except Exception:  # the run failed before its report
            report = None
    synthesis = (report or {}).get("synthesis")
    path = cache_file(judged, question)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"question": material.question, "plan": material.plan,
                                "sources": [vars(s) for s in material.sources]}, ensure_ascii=False),
                    encoding="utf-8")
    return synthesis


def resynthesize(judged: JudgedSet, question: dict, llm: bool) -> dict | None:
    from tasks.common.llm import LLMConfig
    from tasks.common.settings import Settings
    from tasks.synthesis.base import Source
    from tasks.synthesis.synthesizer import synthesize

    path = cache_file(judged, question)
    if not path.is_file():
        return None
    cached = json.loads(path.read_text(encoding="utf-8"))
    sources = [Source(**s) for s in cached["sources"]]
    config = LLMConfig.from_settings(Settings()) if llm else None
    result = synthesize(sources, cached["question"], cached["plan"], llm=config, fallback=False)
    return result.model_dump(mode="json")


# -- one set ------------------------------------------------------------------------------

def evaluate(judged: JudgedSet, limit: int | None, resynth: bool, llm: bool) -> dict:
    questions = judged.questions[:limit] if limit else judged.questions
    judged = JudgedSet(judged.name, judged.library, judged.install, questions)
    started = time.perf_counter()
    result: dict = {"set": judged.name, "library": judged.library or "pydoc_data.topics (default corpus)"}
    if resynth:
        syntheses = [resynthesize(judged, q, llm) for q in questions]
    else:
        relevant = [set(q["relevant"]) for q in questions]
        ranked, syntheses, aborted = [], [], []
        stamp = time.strftime("%H%M%S")
        for number, q in enumerate(questions, 1):
            task_id = f"ans-{judged.name}-{q['id']}-{stamp}"[:60]
            run = run_pipeline(judged, q, task_id)
            ranked.append(run.ranked)
            if run.status != "complete":
                aborted.append({"id": q["id"], "message": run.message})
            syntheses.append(save_input(judged, q, task_id))
            print(f"  [{number}/{len(questions)}] {run.status:8} {run.seconds:5.1f}s "
                  f"rank {first_relevant(run.ranked, relevant[number - 1]) or '-':>2}  {q['question']}",
                  file=sys.stderr, flush=True)
        methods = {"pipeline": ranked, "question-only": question_only(judged, questions),
                   "bm25s": bm25s_rankings(judged, questions), "bm25s-bigram": bigram_rankings(judged, questions)}
        covered = [i for i, q in enumerate(questions) if q.get("kind") != "uncovered"]
        result["methods"] = {name: summarize([first_relevant(r[i], relevant[i]) for i in covered])
                             for name, r in methods.items()}
        result["aborted"] = aborted
    result["answers"] = score_answers(judged, syntheses)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def print_table(results: list[dict]) -> None:
    for r in results:
        for name, m in (r.get("methods") or {}).items():
            print(f"{r['set']:16} {name:14} hit@5 {m['hit@5']:.3f}  MRR@10 {m['mrr@10']:.3f}  n {m['questions']}")
        a = r["answers"]
        print(f"{r['set']:16} answers: nugget recall {a['nugget_recall']:.3f} ({a['nuggets']}; in the terminal's "
              f"summary {a.get('nuggets_in_terminal_summary', '-')}); complete "
              f"{a['complete_answers']}; first insight relevant {a['first_insight']}; honest gaps "
              f"{a['honest_gaps']}; covered said unanswered {a['false_gaps']} (nothing quoted), hedged "
              f"{a['hedged']} (quoted, said to only touch it); quotes verified {a['quotes_verified']}"
              + (f"; aborted {len(r['aborted'])}" if r.get("aborted") else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="notes_en,debian_ref_zh,pydoc_topics")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--resynth", action="store_true", help="synthesis only, over the cached inputs")
    parser.add_argument("--llm", action="store_true", help="with --resynth: the LLM synthesizer (SEARCHLAKE_LLM_*)")
    parser.add_argument("--out", type=Path, default=BENCH / "out" / "answers.json")
    args = parser.parse_args(argv)

    sets = [load_set(SETS / f"{name.strip()}.json") for name in args.sets.split(",") if name.strip()]
    for judged in sets:
        if judged.library and not Path(judged.library).is_absolute():
            judged.library = str(ROOT / judged.library)
    problems = [p for p in map(missing_library, sets) if p]
    if problems:
        print("error: " + " ".join(problems), file=sys.stderr)
        return 2
    if args.llm and not os.environ.get("SEARCHLAKE_LLM_BASE_URL"):
        print("error: --llm needs an OpenAI-compatible endpoint (SEARCHLAKE_LLM_BASE_URL, _API_KEY, _MODEL); "
              "none is configured", file=sys.stderr)
        return 2
    if not args.resynth:
        os.environ["SEARCHLAKE_HOME"] = tempfile.mkdtemp(prefix="searchlake-answers-")
    results = [evaluate(judged, args.limit, args.resynth, args.llm) for judged in sets]
    print_table(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": results},
                                   indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
