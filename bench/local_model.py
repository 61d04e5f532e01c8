"""The LLM path against a real local model, beside the extractive path in the
same run: what a person who points searchlake at a model server on their own
machine gets, in quality and in time.

    .venv/bin/python bench/local_model.py --gguf PATH [--server-python PYTHON]
    .venv/bin/python bench/local_model.py --endpoint http://127.0.0.1:11434/v1 --model qwen2.5:7b
    options: --sets notes_en --half test --limit N --timeout 60 --n-ctx 8192 --chat-format gemma

--gguf starts llama.cpp's OpenAI-compatible server (`python -m
llama_cpp.server`, from the llama-cpp-python of --server-python) on a free
port of 127.0.0.1 with that model file, and stops it at the end; --endpoint
(repeatable, each with its --model) names any other OpenAI-compatible
endpoint. Every configuration — first the extractive path (no model), then
each endpoint — runs every question of the chosen sets as a research run
(library only, offline, a fresh SEARCHLAKE_HOME each), and is scored with
bench/answers.py's harness:
- the planner: plans the model wrote (as written, or once their JSON was
  repaired) and plans that fell back to keywords, with why;
- every kind of model call: answers taken as written, repaired, unusable
  (the run's `model` record), calls, tokens and model seconds;
- facts within the answer's first 400 words, facts anywhere, median and
  90th-percentile answer length, first point citing a relevant page,
  honest gaps, cautions on covered questions, quotes verified;
- invented quotes caught: quotes the model gave that its source does not
  hold (dropped from the evidence and named in the report's warnings);
- run time, median and 90th percentile, and the runs in which the model was
  given up on (which stages ran without it, and why).
Results also go to --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.answers import answer_sets, part_of, percentile, score_answers  # noqa: E402
from bench.relevance import JudgedSet, run_pipeline  # noqa: E402

LLM_VARIABLES = ("SEARCHLAKE_LLM_BASE_URL", "SEARCHLAKE_LLM_MODEL", "SEARCHLAKE_LLM_API_KEY",
                 "SEARCHLAKE_LLM_TIMEOUT")


@dataclass(frozen=True)
class Configuration:
    name: str
    base_url: str | None = None
    model: str | None = None


# -- a llama.cpp server of our own --------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_llama_server(python: str, gguf: Path, chat_format: str, n_ctx: int, log: Path) -> tuple[subprocess.Popen, str]:
    """llama-cpp-python's server on 127.0.0.1, once it answers /v1/models."""
    import httpx

    port = free_port()
    command = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
               "--chat_format", chat_format, "--n_ctx", str(n_ctx)]
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"error: the llama.cpp server stopped at start-up; see {log}")
        try:
            if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                return server, base
        except httpx.HTTPError:
            pass
        time.sleep(1)
    server.kill()
    raise SystemExit(f"error: the llama.cpp server did not answer within 120 s; see {log}")


def stop(server: subprocess.Popen) -> None:
    """The server stopped, killed if it does not stop within 10 s (it may be
    generating an answer its client gave up on)."""
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


# -- one configuration over one set -------------------------------------------------------

def configure(config: Configuration, timeout: float) -> None:
    for name in LLM_VARIABLES:
        os.environ.pop(name, None)
    if config.base_url:
        os.environ.update({"SEARCHLAKE_LLM_BASE_URL": config.base_url, "SEARCHLAKE_LLM_MODEL": config.model or "",
                           "SEARCHLAKE_LLM_API_KEY": "local", "SEARCHLAKE_LLM_TIMEOUT": str(timeout)})
    os.environ["SEARCHLAKE_HOME"] = tempfile.mkdtemp(prefix=f"searchlake-local-model-{config.name}-")


def run_record(task_id: str) -> dict:
    """The task's plan, the run's model record and its report."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import run_query
    from tasks.reporting.report import load_report
    from tasks.retrieval.plan_store import stored_plan

    with open_catalog(Settings(), "local model: record", read_only=True) as catalog:
        plan = stored_plan(catalog, task_id)
        plan = plan.model_dump(mode="json") if plan else {}
        outputs = run_query(catalog, "SELECT outputs FROM runs WHERE task_id = ? ORDER BY started_at DESC LIMIT 1",
                            [task_id]).rows
        try:
            report = json.loads(load_report(catalog, task_id, "json"))
        except Exception:  # the run failed before its report
            report = {}
    record = outputs[0][0] if outputs else None
    record = json.loads(record) if isinstance(record, str) else (record or {})
    return {"plan": plan, "model": record.get("model") or {}, "report": report}


def invented_quotes(report: dict) -> int:
    warnings = (report.get("metadata") or {}).get("warnings") or []
    return sum(1 for w in warnings if str(w).startswith("unverified citation"))


def evaluate(config: Configuration, judged: JudgedSet, timeout: float) -> dict:
    configure(config, timeout)
    stamp = time.strftime("%H%M%S")
    runs, syntheses = [], []
    for number, question in enumerate(judged.questions, 1):
        task_id = f"lm-{config.name}-{question['id']}-{stamp}"[:60]
        run = run_pipeline(judged, question, task_id)
        record = run_record(task_id)
        synthesis = (record["report"] or {}).get("synthesis")
        syntheses.append(synthesis)
        runs.append({"id": question["id"], "status": run.status, "message": run.message, "seconds": run.seconds,
                     "synthesizer": (synthesis or {}).get("synthesizer"),
                     "planner": record["plan"].get("planner"), "fallback_reason": record["plan"].get("fallback_reason"),
                     "model": record["model"], "invented_quotes": invented_quotes(record["report"])})
        print(f"  {config.name:12} [{number}/{len(judged.questions)}] {run.status:8} {run.seconds:6.1f}s "
              f"planner {runs[-1]['planner']}  {question['question']}", file=sys.stderr, flush=True)
    answers = score_answers(judged, syntheses, "test")["all"]
    answers.pop("per_question")
    return {"configuration": config.name, "endpoint": config.base_url, "model": config.model, "set": judged.name,
            "questions": len(judged.questions), "answers": answers, "runs": runs, "summary": summary(runs)}


def summary(runs: list[dict]) -> dict:
    seconds = [r["seconds"] for r in runs]
    answers: dict[str, dict[str, int]] = {}
    for r in runs:
        for kind, counts in (r["model"].get("answers") or {}).items():
            for how, n in counts.items():
                answers.setdefault(kind, {}).setdefault(how, 0)
                answers[kind][how] += n
    plans = answers.get("plan", {})
    return {
        "median_seconds": round(statistics.median(seconds), 1) if seconds else 0.0,
        "p90_seconds": percentile(seconds, 0.9),
        "plans_from_model": sum(1 for r in runs if r["planner"] == "llm"),
        "plans_as_written": plans.get("as_written", 0), "plans_repaired": plans.get("repaired", 0),
        "plans_fell_back": sum(1 for r in runs if r["planner"] == "keywords"),
        "fallback_reasons": sorted({r["fallback_reason"] for r in runs if r["fallback_reason"]}),
        "answers": answers,
        "calls": sum(r["model"].get("calls", 0) for r in runs),
        "model_seconds": round(sum(r["model"].get("seconds", 0) for r in runs), 1),
        "tokens": sum((r["model"].get("prompt_tokens") or 0) + (r["model"].get("completion_tokens") or 0)
                      for r in runs),
        "model_given_up": sum(1 for r in runs if r["model"].get("without_model")),
        "given_up_because": sorted({r["model"]["without_model"] for r in runs if r["model"].get("without_model")}),
        "invented_quotes_caught": sum(r["invented_quotes"] for r in runs),
        "synthesized_by_model": sum(1 for r in runs if str(r["synthesizer"]).startswith("llm:")),
        "aborted": sum(1 for r in runs if r["status"] != "complete"),
    }


def print_table(results: list[dict]) -> None:
    for r in results:
        a, s = r["answers"], r["summary"]
        print(f"{r['set']:14} {r['configuration']:12} facts in 400 words {a['facts_in_answer']:.3f} "
              f"({a['nuggets_in_answer']}), anywhere {a['facts_anywhere']:.3f}; words median {a['median_words']:g} "
              f"p90 {a['p90_words']:g}; first relevant {a['first_insight']}; honest gaps {a['honest_gaps']}; "
              f"cautions {a['cautions_on_covered']}; verified {a['quotes_verified']}; "
              f"run s median {s['median_seconds']:g} p90 {s['p90_seconds']:g}")
        if r["endpoint"]:
            print(f"{'':14} {'':12} plans from the model {s['plans_from_model']}/{r['questions']} "
                  f"(as written {s['plans_as_written']}, repaired {s['plans_repaired']}), fell back "
                  f"{s['plans_fell_back']}; answers {json.dumps(s['answers'])}; calls {s['calls']}, "
                  f"{s['model_seconds']:g} model s, {s['tokens']} tokens; model given up in {s['model_given_up']} "
                  f"runs; syntheses by the model {s['synthesized_by_model']}; invented quotes caught "
                  f"{s['invented_quotes_caught']}")
            for reason in s["fallback_reasons"][:3] + s["given_up_because"][:3]:
                print(f"{'':14} {'':12}   {reason[:200]}")


def chosen_questions(judged: JudgedSet, half: str, limit: int | None) -> JudgedSet:
    questions = [q for q in judged.questions if half == "all" or part_of(judged.name, judged.role, q["id"]) == half]
    return JudgedSet(judged.name, judged.library, judged.install, questions[:limit] if limit else questions,
                     judged.role)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, help="a model file: start llama.cpp's server with it")
    parser.add_argument("--server-python", default=sys.executable,
                        help="the Python whose llama-cpp-python serves --gguf")
    parser.add_argument("--chat-format", default="gemma")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--endpoint", action="append", default=[], help="another OpenAI-compatible endpoint")
    parser.add_argument("--model", action="append", default=[], help="the model name of each --endpoint")
    parser.add_argument("--sets", default="notes_en")
    parser.add_argument("--half", default="test", choices=("test", "tune", "all"))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--timeout", type=float, default=60.0, help="SEARCHLAKE_LLM_TIMEOUT of the model runs")
    parser.add_argument("--out", type=Path, default=BENCH / "out" / "local_model.json")
    args = parser.parse_args(argv)
    if len(args.model) != len(args.endpoint):
        print("error: give one --model for each --endpoint", file=sys.stderr)
        return 2
    sets, problems = answer_sets(args.sets)
    if problems:
        print("error: " + " ".join(problems), file=sys.stderr)
        return 2

    configs = [Configuration("extractive")]
    configs += [Configuration(f"endpoint{i + 1}", url, model) for i, (url, model) in
                enumerate(zip(args.endpoint, args.model))]
    server = None
    if args.gguf:
        log = BENCH / "out" / "llama_server.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        server, base = start_llama_server(args.server_python, args.gguf, args.chat_format, args.n_ctx, log)
        configs.append(Configuration("llama.cpp", base, args.gguf.stem))
    try:
        results = [evaluate(config, chosen_questions(judged, args.half, args.limit), args.timeout)
                   for judged in sets for config in configs]
    finally:
        if server is not None:
            stop(server)
    print_table(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "half": args.half,
                                    "results": results}, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
