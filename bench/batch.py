"""A batch of questions against as many separate commands, in one run.

    .venv/bin/python bench/batch.py [--n 100] [--concurrency 1,2,4] [--kill-after 2]

On the default corpus (`make run`'s: the Python language reference topics,
no --library), with --n questions made from its topic names:
  * `searchlake research --questions FILE --concurrency C` for each C, each
    on a fresh SEARCHLAKE_HOME: questions per minute, peak memory;
  * the baseline: --n separate `searchlake research "Q" --here` commands
    (each its own process and Prefect temporary server), one after another,
    on a fresh home: questions per minute, peak memory;
  * the answers: for each concurrency, how many questions the batch
    answered word for word as the separate command did;
  * SIGKILL and resume: the batch at concurrency 2 killed (its whole process
    group) once --kill-after questions have a report, then run again: every
    question answered once, no query landed twice, the answered ones not run
    again.
Peak memory is the largest resident set of any process of the step
(resource.getrusage(RUSAGE_CHILDREN) of a process that runs only that step).
Results: a table on stdout and bench/out/batch.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Runs one step as its own child and prints the step's peak RSS (kB) last.
MEASURED = ("import resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
TEMPLATES = ("What does Python's {} do?", "How is {} used in Python?")


def corpus_questions(n: int) -> list[str]:
    """Questions named after the default corpus's documents (its topic names)."""
    from pydoc_data import topics
    names = [name.replace("-", " ") for name in sorted(topics.topics)]
    return [TEMPLATES[i // len(names) % len(TEMPLATES)].format(names[i % len(names)]) for i in range(n)]


def searchlake(*args: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", *args]


def environment(home: Path, prefect_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEARCHLAKE_", "PREFECT_API_URL"))}
    env.update(SEARCHLAKE_HOME=str(home), SEARCHLAKE_AUTOSERVE="false", PREFECT_HOME=str(prefect_home),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    return env


def measured(commands: list[list[str]], env: dict) -> tuple[float, int, list[int]]:
    """Seconds, peak RSS (MB) and exit codes of commands run one after another."""
    started = time.perf_counter()
    peak, codes = 0, []
    for command in commands:
        done = subprocess.run([sys.executable, "-c", MEASURED, *command], env=env, cwd=ROOT, capture_output=True,
                              text=True, check=True)
        code, rss = done.stdout.split()[-2:]
        codes.append(int(code))
        peak = max(peak, int(rss))
    return time.perf_counter() - started, peak // 1024, codes


def answered(home: Path) -> dict:
    """What the lake holds: reports, complete runs and landed queries per task."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    with open_catalog(Settings(home=home), "bench", read_only=True) as catalog:
        rows = lambda query: catalog.con.execute(query).fetchall()  # noqa: E731
        return {"reports": Counter(r[0] for r in rows("SELECT task_id FROM reports")),
                "complete_runs": Counter(r[0] for r in rows("SELECT task_id FROM runs WHERE status = 'complete'")),
                "runs": Counter(r[0] for r in rows("SELECT task_id FROM runs")),
                "bundles": rows("SELECT task_id, count(*), count(DISTINCT query_id) FROM bundles GROUP BY task_id")}


def answers(home: Path) -> dict[str, list[str]]:
    """Each question's answer, its points' texts, as the lake's reports hold it."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.reporting.report import load_report
    with open_catalog(Settings(home=home), "bench", read_only=True) as catalog:
        tasks = catalog.con.execute("SELECT task_id, question FROM reports").fetchall()
        return {question: [point["text"] for point in json.loads(load_report(catalog, task, "json"))["synthesis"]["answer"]]
                for task, question in tasks}


def identical(batch: dict[str, list[str]], separate: dict[str, list[str]]) -> str:
    """How many of the separate commands' answers the batch gave word for word."""
    return f"{sum(batch.get(q) == a for q, a in separate.items())}/{len(separate)}"


def kill_and_resume(questions: Path, n: int, kill_after: int, workdir: Path) -> dict:
    home, prefect_home = workdir / "kill-home", workdir / "kill-prefect"
    env = environment(home, prefect_home)
    command = searchlake("research", "--questions", str(questions), "--concurrency", "2")
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    reports = home / "lake" / "reports"
    try:
        while process.poll() is None and len(list(reports.glob("task_id=*/*/report.json"))) < kill_after:
            time.sleep(0.1)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    before = answered(home)
    started = time.perf_counter()
    again = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = answered(home)
    doubled = [task for task, count, distinct in after["bundles"] if count != distinct]
    rerun = [task for task in before["reports"] if after["runs"][task] != before["runs"][task]]
    ok = (again.returncode == 0 and len(after["reports"]) == n and set(after["reports"].values()) == {1}
          and set(after["complete_runs"].values()) == {1} and not doubled and not rerun)
    return {"answered_before_kill": len(before["reports"]), "resume_seconds": round(seconds, 1),
            "answered_after": len(after["reports"]), "queries_landed_twice": doubled,
            "answered_questions_run_again": rerun, "ok": ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100, help="questions in the batch")
    parser.add_argument("--concurrency", default="1,2,4", help="comma list of batch concurrencies")
    parser.add_argument("--kill-after", type=int, default=2, help="reports before the SIGKILL")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    results: dict = {"n": args.n, "batch": {}, "load_at_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as folder:
        workdir = Path(folder)
        questions = workdir / "questions.txt"
        texts = corpus_questions(args.n)
        given: dict[int, dict[str, list[str]]] = {}
        questions.write_text("\n".join(texts) + "\n", encoding="utf-8")
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            env = environment(workdir / f"home-c{concurrency}", workdir / f"prefect-c{concurrency}")
            seconds, peak, codes = measured([searchlake("research", "--questions", str(questions),
                                                        "--concurrency", str(concurrency))], env)
            results["batch"][concurrency] = {"seconds": round(seconds, 1), "per_minute": round(args.n * 60 / seconds, 2),
                                             "peak_mb": peak, "exit": codes[0]}
            given[concurrency] = answers(workdir / f"home-c{concurrency}")
            print(f"batch, concurrency {concurrency}: {seconds:.1f} s, {args.n * 60 / seconds:.2f} questions/min, "
                  f"peak {peak} MB, exit {codes[0]}", flush=True)
        env = environment(workdir / "home-separate", workdir / "prefect-separate")
        seconds, peak, codes = measured([searchlake("research", text, "--here", "--task-id", f"separate-{i}")
                                         for i, text in enumerate(texts, start=1)], env)
        results["separate"] = {"seconds": round(seconds, 1), "per_minute": round(args.n * 60 / seconds, 2),
                               "peak_mb": peak, "exits": dict(Counter(codes))}
        print(f"{args.n} separate commands: {seconds:.1f} s, {args.n * 60 / seconds:.2f} questions/min, "
              f"peak {peak} MB, exits {dict(Counter(codes))}", flush=True)
        separate_answers = answers(workdir / "home-separate")
        for concurrency, batch in results["batch"].items():
            batch["answers_identical"] = identical(given[concurrency], separate_answers)
        results["kill_and_resume"] = kill_and_resume(questions, args.n, min(args.kill_after, args.n - 1), workdir)
        print(f"SIGKILL and resume: {results['kill_and_resume']}", flush=True)
    for concurrency, batch in results["batch"].items():
        batch["speedup_vs_separate"] = round(batch["per_minute"] / results["separate"]["per_minute"], 2)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "batch.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print("\n| | seconds | questions/min | × separate | peak MB | answers as the separate commands' |\n"
          "|---|---|---|---|---|---|")
    for concurrency, batch in results["batch"].items():
        print(f"| batch, concurrency {concurrency} | {batch['seconds']} | {batch['per_minute']} | "
              f"{batch['speedup_vs_separate']} | {batch['peak_mb']} | {batch['answers_identical']} |")
    separate = results["separate"]
    print(f"| {args.n} separate commands | {separate['seconds']} | {separate['per_minute']} | 1.0 | "
          f"{separate['peak_mb']} | |")


if __name__ == "__main__":
    main()
