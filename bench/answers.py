"""Answer evaluation (nugget-based, as in TREC's RAG track): does the answer a
reader meets hold the facts the question needs, within what a person reads
in a minute, cite the right pages, and say so honestly when the documents
do not answer?

    .venv/bin/python bench/answers.py [--sets notes_en,debian_ref_zh,...] [--limit N]
    .venv/bin/python bench/answers.py --resynth        # synthesis again over the cached sources
    .venv/bin/python bench/answers.py --before COMMIT  # the same, and the same run at COMMIT beside it

A set (bench/answers/<name>.json) is a relevance set (bench/relevance.py)
whose questions also list `nuggets`: the facts a useful answer must contain,
each with `match` strings — the fact as the relevant pages word it — and
`kind` "uncovered" for questions the documents do not answer. A set whose
`role` is "test" was built to test on only, one whose role is "tune" to
tune on only (manuals the size of the test sets'); every other set is split once
into a tuning half and a test half by a hash of the question's id
(part_of): only the tuning half may guide a change, and every figure is
reported for both halves.

In one run per set, offline (library only), in a fresh SEARCHLAKE_HOME:
- the relevance figures of bench/relevance.py: hit@5 and MRR@10 of the
  research run's consolidated ranking, of the library searched once with the
  question, of plain page-level BM25 (bm25s over words) and of BM25 over
  character bigrams (bm25s again, the usual baseline for Chinese);
- for each research run's report, as its reader meets it:
  - facts within the answer's first 400 words (the headline, TREC RAG's
    budget; a Chinese character counts two thirds of a word): the answer
    is what `searchlake research` prints and what opens the report (its
    `answer`; for a report without one, its findings and key data points,
    in order);
  - facts anywhere in the report (answer, evidence, key data points);
  - the answer's median and 90th-percentile length in words;
  - the first point of the answer citing a relevant page;
  - honest gaps (uncovered questions whose report says the sources do not
    answer it, or may not), cautions on covered questions (the report
    says so of a question the pages answer), quotes verified;
  a nugget counts when one of its match strings occurs in the text,
  compared after NFKC, case folding, reading table cell borders as spaces
  and collapsing whitespace — none at all around CJK text.

The synthesis input of every run (its question, plan and selected sources)
is cached under bench/out/answers/<set>/; --resynth runs only the synthesis
again over that cache — seconds, not minutes — to compare synthesis ideas
on every set at once. With SEARCHLAKE_LLM_* set, --llm runs the LLM
synthesizer over the same cache. --before COMMIT runs this same harness
over the code of COMMIT (a git worktree under bench/out/) and prints both.
"""

from __future__ import annotations

import argparse
import hashlib
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
SENTENCE_VECTORS = BENCH / "out" / "sentence-vectors.sqlite"  # the model reads a passage once over all runs
# the sets that guide changes (the tuning halves of the first three, two tuning-only manuals, and notes_en's
# tuning half asked in Chinese) ...
TUNING_SETS = "notes_en,debian_ref_zh,pydoc_topics,postgres_doc_en,debian_handbook_zh,notes_en_zh"
# ... and every set, with the three built to test on only
EVERY_SET = f"{TUNING_SETS},gimp_help_en,libreoffice_help_zh,pydoc_topics_zh"
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
    """The answer a reader meets first: the report's `answer` points; for a
    report made before it had one, its findings and key data points."""
    if synthesis.get("answer") is not None:
        return "\n".join(point.get("text") or "" for point in synthesis["answer"])
    items = (synthesis.get("synthesized_insights") or []) + (synthesis.get("key_data_points") or [])
    return "\n".join(item.get("text") or "" for item in items)


def report_text(synthesis: dict) -> str:
    """Everything the report says: its answer, evidence and key data points."""
    items = ((synthesis.get("answer") or []) + (synthesis.get("synthesized_insights") or [])
             + (synthesis.get("key_data_points") or []))
    return "\n".join(item.get("text") or "" for item in items)


_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[^\s\u3400-\u4dbf\u4e00-\u9fff]+")
CJK_WORD = 2 / 3  # a Chinese character counts two thirds of a word
BUDGET_WORDS = 400


def reader_words(text: str) -> float:
    """How long a text reads, in words: whitespace-separated words, and each
    Chinese character two thirds of one."""
    return sum(CJK_WORD if _CJK.match(t) else 1.0 for t in _TOKEN.findall(text or ""))


def first_words(text: str, budget: float = BUDGET_WORDS) -> str:
    """The start of `text` a reader reads within `budget` words."""
    used = 0.0
    for match in _TOKEN.finditer(text or ""):
        used += CJK_WORD if _CJK.match(match.group()) else 1.0
        if used > budget:
            return text[:match.start()]
    return text or ""


def part_of(set_name: str, role: str | None, question_id: str) -> str:
    """"test" or "tune": a set built for testing is all test, one built for
    tuning all tune; any other set is split once, by a hash of the set's
    name and the question's id."""
    if role in ("test", "tune"):
        return role
    digest = hashlib.sha256(f"{set_name}/{question_id}".encode()).digest()
    return "test" if digest[0] % 2 else "tune"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    at = share * (len(ordered) - 1)
    low, high = int(at), min(int(at) + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (at - low), 1)


def says_unanswered(synthesis: dict) -> bool:
    """The report's whole-question gap: a gap with no dimension."""
    return any(g.get("kind") == "gap" and not g.get("dimension")
               for g in synthesis.get("contradictions_or_gaps") or [])


def first_insight_pages(synthesis: dict, library: str | None) -> list[str]:
    """The pages the answer's first point cites (for a report without an
    answer: its first finding)."""
    first = (synthesis.get("answer") or synthesis.get("synthesized_insights") or [None])[0]
    return [page_key(c.get("url") or "", library) for c in (first.get("citations") or [])] if first else []


def citations_verified(synthesis: dict) -> tuple[int, int]:
    items = [*(synthesis.get("answer") or []), *(synthesis.get("synthesized_insights") or []),
             *(synthesis.get("key_data_points") or []), *(synthesis.get("contradictions_or_gaps") or [])]
    cited = [c for item in items for c in item.get("citations") or []]
    return sum(1 for c in cited if c.get("verified")), len(cited)


def score_answers(judged: JudgedSet, syntheses: list[dict | None], role: str | None = None) -> dict:
    """Every figure for the set's tuning half, its test half, and all of it."""
    parts: dict[str, list[tuple[dict, dict | None]]] = {"tune": [], "test": []}
    for q, s in zip(judged.questions, syntheses):
        parts[part_of(judged.name, role, q["id"])].append((q, s))
    out = {name: _scored(judged, pairs) for name, pairs in parts.items() if pairs}
    out["all"] = _scored(judged, list(zip(judged.questions, syntheses)))
    return out


def _scored(judged: JudgedSet, pairs: list[tuple[dict, dict | None]]) -> dict:
    covered = [(q, s or {}) for q, s in pairs if q.get("kind") != "uncovered"]
    uncovered = [(q, s or {}) for q, s in pairs if q.get("kind") == "uncovered"]
    nuggets = in_budget = anywhere = complete = first_ok = cautions = verified = cited = 0
    lengths, per_question = [], {}
    for q, s in pairs:
        v, c = citations_verified(s or {})
        verified, cited = verified + v, cited + c
        lengths.append(reader_words(answer_text(s or {})))
    for q, s in covered:
        read = first_words(answer_text(s))
        hits = [nugget_found(n, read) for n in q["nuggets"]]
        nuggets += len(hits)
        in_budget += sum(hits)
        anywhere += sum(nugget_found(n, report_text(s)) for n in q["nuggets"])
        complete += all(hits) and bool(hits)
        relevant_first = bool(set(first_insight_pages(s, judged.library)) & set(q["relevant"]))
        first_ok += relevant_first
        cautions += says_unanswered(s)
        per_question[q["id"]] = {"nuggets_in_answer": f"{sum(hits)}/{len(hits)}",
                                 "answer_words": round(reader_words(answer_text(s))),
                                 "first_cites_relevant": relevant_first, "caution": says_unanswered(s)}
    honest = sum(says_unanswered(s) for _, s in uncovered)
    for q, s in uncovered:
        per_question[q["id"]] = {"says_unanswered": says_unanswered(s)}
    n = max(1, len(covered))
    return {
        "covered": len(covered), "uncovered": len(uncovered),
        "facts_in_answer": round(in_budget / max(1, nuggets), 3), "nuggets_in_answer": f"{in_budget}/{nuggets}",
        "facts_anywhere": round(anywhere / max(1, nuggets), 3), "nuggets_anywhere": f"{anywhere}/{nuggets}",
        "median_words": percentile(lengths, 0.5), "p90_words": percentile(lengths, 0.9),
        "complete_answers": f"{complete}/{len(covered)}",
        "first_insight_relevant": round(first_ok / n, 3), "first_insight": f"{first_ok}/{len(covered)}",
        "honest_gaps": f"{honest}/{len(uncovered)}", "cautions_on_covered": f"{cautions}/{len(covered)}",
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
    judged = JudgedSet(judged.name, judged.library, judged.install, questions, judged.role)
    started = time.perf_counter()
    result: dict = {"set": judged.name, "library": judged.library or "pydoc_data.topics (default corpus)"}
    if resynth:
        from tasks.common.sentence_model import vectors_kept_in
        with vectors_kept_in(SENTENCE_VECTORS):
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
        halves = {"all": [i for i, q in enumerate(questions) if q.get("kind") != "uncovered"]}
        for i in halves["all"]:
            halves.setdefault(part_of(judged.name, judged.role, questions[i]["id"]), []).append(i)
        result["methods"] = {part: {name: summarize([first_relevant(r[i], relevant[i]) for i in covered])
                                    for name, r in methods.items()} for part, covered in halves.items()}
        result["aborted"] = aborted
    result["answers"] = score_answers(judged, syntheses, judged.role)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def print_table(results: list[dict], label: str = "", halves: tuple[str, ...] = ("tune", "test", "all")) -> None:
    """The figures of the halves named (--halves tune while changing code:
    the test halves are for deciding what is kept, not for guiding it)."""
    for r in results:
        for part, methods in (r.get("methods") or {}).items():
            if part not in halves:
                continue
            for name, m in methods.items():
                print(f"{label}{r['set']:20} {part:4} {name:14} hit@5 {m['hit@5']:.3f}  MRR@10 {m['mrr@10']:.3f}  "
                      f"n {m['questions']}")
        for part, a in r["answers"].items():
            if part not in halves:
                continue
            print(f"{label}{r['set']:20} {part:4} answer: facts in 400 words {a['facts_in_answer']:.3f} "
                  f"({a['nuggets_in_answer']}), anywhere {a['facts_anywhere']:.3f}; words median {a['median_words']:g} "
                  f"p90 {a['p90_words']:g}; first relevant {a['first_insight']}; honest gaps {a['honest_gaps']}; "
                  f"cautions on covered {a['cautions_on_covered']}; verified {a['quotes_verified']}"
                  + (f"; aborted {len(r['aborted'])}" if r.get("aborted") and part == "all" else ""))


def run_before(commit: str, argv: list[str]) -> list[dict]:
    """This harness over the code of `commit`: a worktree of it under
    bench/out/, with this harness and these sets copied in, run as its own
    process (so that it imports that code, not this). With --resynth it
    reads the same cached inputs; a full run caches its own inputs in a
    folder of its own (so that a later --resynth reads this code's)."""
    import shutil
    import subprocess
    sha = subprocess.run(["git", "rev-parse", "--short", commit], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    tree = BENCH / "out" / f"before-{sha}"
    if not tree.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=ROOT, check=True,
                       capture_output=True)
    for name in ("answers.py", "relevance.py"):
        shutil.copy2(BENCH / name, tree / "bench" / name)
    for folder in ("answers", "relevance"):
        shutil.copytree(BENCH / folder, tree / "bench" / folder, dirs_exist_ok=True)
    out = BENCH / "out" / f"answers-{sha}.json"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cache = CACHE if "--resynth" in argv else CACHE.parent / f"{CACHE.name}-{sha}"
    subprocess.run([sys.executable, str(tree / "bench" / "answers.py"), *argv, "--out", str(out),
                    "--cache", str(cache)], cwd=tree, env=env, check=True)
    return json.loads(out.read_text(encoding="utf-8"))["results"]


def answer_sets(names: str) -> tuple[list[JudgedSet], list[str]]:
    """The judged sets named (comma-separated), their library folders made
    absolute, and what is missing to run them (a library not installed)."""
    sets = [load_set(SETS / f"{name.strip()}.json") for name in names.split(",") if name.strip()]
    for judged in sets:
        if judged.library and not Path(judged.library).is_absolute():
            judged.library = str(ROOT / judged.library)
    return sets, [p for p in map(missing_library, sets) if p]


def main(argv: list[str] | None = None) -> int:
    global CACHE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=EVERY_SET)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--resynth", action="store_true", help="synthesis only, over the cached inputs")
    parser.add_argument("--llm", action="store_true", help="with --resynth: the LLM synthesizer (SEARCHLAKE_LLM_*)")
    parser.add_argument("--before", metavar="COMMIT", help="the same run over the code of COMMIT, printed beside")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the synthesis inputs are cached")
    parser.add_argument("--halves", default="tune,test,all", help="which halves' figures to print (all are saved)")
    parser.add_argument("--out", type=Path, default=BENCH / "out" / "answers.json")
    args = parser.parse_args(argv)
    CACHE = args.cache

    sets, problems = answer_sets(args.sets)
    if problems:
        print("error: " + " ".join(problems), file=sys.stderr)
        return 2
    if args.llm and not os.environ.get("SEARCHLAKE_LLM_BASE_URL"):
        print("error: --llm needs an OpenAI-compatible endpoint (SEARCHLAKE_LLM_BASE_URL, _API_KEY, _MODEL); "
              "none is configured", file=sys.stderr)
        return 2
    before = None
    if args.before:
        again = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--before" and a != args.before]
        before = run_before(args.before, [a for a in again if not a.startswith("--before=")])
    if not args.resynth:
        os.environ["SEARCHLAKE_HOME"] = tempfile.mkdtemp(prefix="searchlake-answers-")
    results = [evaluate(judged, args.limit, args.resynth, args.llm) for judged in sets]
    halves = tuple(h.strip() for h in args.halves.split(","))
    if before is not None:
        print_table(before, label=f"{args.before[:10]:10} ", halves=halves)
        print_table(results, label=f"{'now':10} ", halves=halves)
    else:
        print_table(results, halves=halves)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": results,
                                    "before": {"commit": args.before, "results": before} if before else None},
                                   indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
