"""How long the interactive commands take as whole processes, against the
work they do, in one run on one machine.

    .venv/bin/python bench/interactive.py [--repeat 3] [--read-ahead: only that part]

For each command, the median of --repeat runs of:
  * research: `searchlake research` on the embedded default (the Python
    documentation library) as a user runs it: the first command starts the
    background `searchlake serve` and hands its run to it (cold), the next
    one finds that server running (warm), and --here runs the flow in the
    command's own process (Prefect's temporary server); each round stops the
    server so the next cold run is cold again; every one of them asks a
    question not asked before, and beside them a question asked before
    (whose passages the sentence model has read: their vectors are kept in
    the home) is asked again in the server and with --here; its work is
    the run's own stage time (runs.elapsed_seconds);
  * reading ahead: in two new homes, a first command starts the background
    server, then --repeat new questions are asked of it: in one home with
    SEARCHLAKE_READ_AHEAD_TEXTS=0, in the other once the server has read
    the library ahead in its idle time (its kept vectors stop growing);
  * sql, report: the command as a process; its work is the same call
    (open the catalog, run the query / load the report) timed in this process;
  * ask: the command against a fake OpenRouter on 127.0.0.1; its work is the
    same ask() timed in this process against the same endpoint.
Everything runs against a fresh SEARCHLAKE_HOME and PREFECT_HOME in a temp folder.

    .venv/bin/python bench/interactive.py --quick [--repeat 7]

measures only the quick commands, against the project's target for them (at
most 3x a bare `python -c "import duckdb"` process, timed in the same run):
`sql`, `tasks` and `report` of a missing task (its one-line error) on a lake
holding the shipped samples (`searchlake demo`), interleaved with the bare
process, the median of --repeat runs each; beside them, for scale, a process
that imports DuckDB and loads the two extensions the default catalog needs
(DuckLake and SQLite's client), which every command that opens the lake pays.
No research run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A new question for every research command (its passages not yet read by the sentence model), then
# questions asked before, whose passages' vectors the home has kept.
QUESTIONS = ["How does Python's garbage collector handle reference cycles?",
             "What does the with statement do with the context manager's __exit__ method?",
             "When are default argument values evaluated?",
             "What is the difference between the is operator and ==?",
             "How does a generator resume after a yield expression?",
             "When is an object's __del__ method called?",
             "How are names resolved in nested functions?",
             "What does the global statement do?",
             "How does a decorator change the function it is applied to?",
             "What happens when an exception is raised inside a finally clause?",
             "How are keyword-only parameters declared?",
             "What does the nonlocal statement do?"]
COMPLETION = {"id": "gen-1", "object": "chat.completion", "model": "openai/gpt-4o-mini",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {
                  "role": "assistant", "content": "Reference cycles are found by the cyclic collector.",
                  "annotations": [{"type": "url_citation", "url_citation": {
                      "url": "https://docs.python.org/3/library/gc.html", "title": "gc", "start_index": 0,
                      "end_index": 10}}]}}],
              "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20, "cost": 0.0001}}


class FakeOpenRouter(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(COMPLETION).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def timed(command: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - started, done


def searchlake(*args: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", *args]


def run_elapsed(home: Path, output: str) -> float:
    """The run's own stage time, by the trace id the command printed (on stderr, with its progress)."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    trace = next(line.split()[-1] for line in output.splitlines() if line.startswith("trace id:"))
    with open_catalog(Settings(home=home), "bench", read_only=True) as catalog:
        return catalog.con.execute("SELECT elapsed_seconds FROM runs WHERE trace_id = ?", [trace]).fetchone()[0]


def stop_server(home: Path) -> None:
    """Stop the background servers the research commands started (their
    records: serve-<pid>.json), and wait until they are gone."""
    for record in home.glob("serve-*.json"):
        try:
            pid = json.loads(record.read_text())["pid"]
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError, KeyError):
            continue
        while running(pid):
            time.sleep(0.2)


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for_read_ahead(home: Path, quiet: float = 4.0, longest: float = 600.0) -> float:
    """Wait until the server has read the library ahead: the vectors kept
    in the home stop growing for `quiet` seconds; the seconds waited."""
    import sqlite3
    started = time.perf_counter()
    count, since = -1, started
    while time.perf_counter() - started < longest:
        with sqlite3.connect(home / "cache" / "sentence-vectors.sqlite", timeout=5) as db:
            now = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        if now != count:
            count, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet:
            break
        time.sleep(0.5)
    return time.perf_counter() - started


def read_ahead_pairs(base: dict, tmp: Path, repeat: int, record) -> None:
    """The same new questions asked of a background server that read
    nothing ahead and of one that read the library ahead, each in a home
    of its own."""
    first, *questions = QUESTIONS[:1 + repeat]
    for label, texts in (("nothing read ahead", "0"), ("the library read ahead", None)):
        home = tmp / f"home-ahead-{texts or 'on'}"
        env = {**base, "SEARCHLAKE_HOME": str(home)}
        if texts is not None:
            env["SEARCHLAKE_READ_AHEAD_TEXTS"] = texts
        try:
            _, done = timed(searchlake("research", first, "--task-id", "first"), env)
            assert done.returncode == 0, done.stderr
            if texts is None:
                print(f"  the server read the library ahead in {wait_for_read_ahead(home):.0f} s", flush=True)
            for n, question in enumerate(questions):
                whole, done = timed(searchlake("research", question, "--task-id", f"q{n}"), env)
                assert done.returncode == 0, done.stderr
                record(f"research, a new question, {label}", whole, run_elapsed(home, done.stderr + done.stdout))
        finally:
            stop_server(home)


def in_process(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


QUICK_QUERY = "select provider, count(*) from results group by 1"
# A process that imports DuckDB and loads extension files given by path: the
# engine's own start-up (tasks/lake/engine.py), without searchlake's.
LOAD_EXTENSIONS = ("import duckdb, sys\ncon = duckdb.connect()\n"
                   "for path in sys.argv[1:]: con.execute(f\"LOAD '{path}'\")")


def quick_commands(repeat: int) -> None:
    """The quick commands as whole processes against a bare `import duckdb`
    process, in one run (see the module's docstring, --quick)."""
    from importlib import import_module
    from importlib.resources import files
    home = Path(tempfile.mkdtemp(prefix="searchlake-quick-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEARCHLAKE_", "PREFECT_", "PIPELINE_"))}
    env.update(SEARCHLAKE_HOME=str(home / "home"), PREFECT_HOME=str(home / "prefect"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    _, done = timed(searchlake("demo"), env)
    assert done.returncode == 0, done.stderr
    import duckdb
    ducklake = files(import_module("duckdb_extension_ducklake")) / "extensions" / f"v{duckdb.__version__}"
    extensions = [str(ducklake / "ducklake.duckdb_extension"),
                  str(home / "home" / "extensions" / "sqlite_scanner.duckdb_extension")]  # the link demo made
    baseline = "bare python -c \"import duckdb\""
    commands = {  # name: (command, whether it ends on a one-line error)
        baseline: ([sys.executable, "-c", "import duckdb"], False),
        "sql": (searchlake("sql", QUICK_QUERY), False),
        "tasks": (searchlake("tasks"), False),
        "report of a missing task": (searchlake("report", "--task-id", "nope"), True),
        "for scale: import duckdb, load DuckLake and SQLite's client": (
            [sys.executable, "-c", LOAD_EXTENSIONS, *extensions], False),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat + 1):  # the first round warms the page cache and is not counted
        for name, (command, refused) in commands.items():
            whole, done = timed(command, env)
            if refused:
                assert done.returncode != 0 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, \
                    done.stderr
            else:
                assert done.returncode == 0, done.stderr
            times[name].append(whole)
    medians = {name: statistics.median(found[1:]) for name, found in times.items()}
    print(f"\nmedian of {repeat} runs; load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| command | whole process (s) | ratio to the bare process |")
    print("|---|---|---|")
    for name, median in medians.items():
        print(f"| {name} | {median:.2f} | {median / medians[baseline]:.2f}× |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="only sql, tasks and report of a missing task, against a bare `import duckdb`")
    parser.add_argument("--read-ahead", action="store_true",
                        help="only the new questions asked with and without the library read ahead")
    args = parser.parse_args()
    if args.quick:
        quick_commands(args.repeat)
        return
    tmp = Path(tempfile.mkdtemp(prefix="searchlake-interactive-"))
    home = tmp / "home"
    (tmp / "prefect").mkdir()
    router = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenRouter)
    threading.Thread(target=router.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEARCHLAKE_", "PREFECT_", "PIPELINE_"))}
    env.update(SEARCHLAKE_HOME=str(home), PREFECT_HOME=str(tmp / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               OPENROUTER_API_KEY="sk-or-bench", OPENROUTER_BASE_URL=f"http://127.0.0.1:{router.server_address[1]}/api/v1")
    os.environ.update(env)
    rows: dict[str, list[tuple[float, float]]] = {}

    def record(name: str, whole: float, work: float) -> None:
        rows.setdefault(name, []).append((whole, work))
        print(f"  {name}: process {whole:.2f} s, work {work:.2f} s, ratio {whole / work:.2f}", flush=True)

    read_ahead_pairs(env, tmp, args.repeat, record)
    if args.read_ahead:
        print_rows(rows, args.repeat)
        router.shutdown()
        return
    new_questions = iter(QUESTIONS * (1 + 3 * args.repeat // len(QUESTIONS)))
    asked: list[str] = []

    def research(name: str, question: str, task_id: str, *flags: str, served: bool | None = None) -> None:
        whole, done = timed(searchlake("research", question, "--task-id", task_id, *flags), env)
        assert done.returncode == 0, done.stderr
        if served is not None:
            assert ("started a background searchlake serve" in done.stderr) == (not served), done.stderr
        record(name, whole, run_elapsed(home, done.stderr + done.stdout))
        asked.append(question)

    for i in range(args.repeat):
        try:
            research("research, first command (starts searchlake serve)", next(new_questions), f"cold-{i}",
                     served=False)
            research("research, later commands (searchlake serve running)", next(new_questions), f"warm-{i}",
                     served=True)
            research("research, later command, a question asked before", asked[0], f"again-{i}", served=True)
        finally:
            stop_server(home)
    for i in range(args.repeat):
        research("research --here (temporary Prefect server)", next(new_questions), f"here-{i}", "--here")
        research("research --here, a question asked before", asked[1], f"here-again-{i}", "--here")

    from schemas.ask import AskOptions
    from tasks.ask.single_shot import ask
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import run_analyst_query
    from tasks.reporting.report import load_report
    settings = Settings()
    query = "select provider, count(*) from results group by 1"

    def sql_work() -> None:
        with open_catalog(settings, "bench", read_only=True) as catalog:
            run_analyst_query(catalog, query)

    def report_work() -> None:
        with open_catalog(settings, "bench", read_only=True) as catalog:
            load_report(catalog, "warm-0", "md")

    def ask_work() -> None:
        ask(settings, "What finds reference cycles?", AskOptions(task_id="ask-bench"))

    for i in range(args.repeat):
        whole, done = timed(searchlake("sql", query), env)
        assert done.returncode == 0, done.stderr
        record("sql", whole, in_process(sql_work))
        whole, done = timed(searchlake("report", "--task-id", "warm-0"), env)
        assert done.returncode == 0, done.stderr
        record("report", whole, in_process(report_work))
        whole, done = timed(searchlake("ask", "What finds reference cycles?", "--task-id", "ask-bench"), env)
        assert done.returncode == 0, done.stderr
        record("ask (fake endpoint)", whole, in_process(ask_work))

    print_rows(rows, args.repeat)
    router.shutdown()


def print_rows(rows: dict[str, list[tuple[float, float]]], repeat: int) -> None:
    print(f"\nmedian of {repeat} runs; load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| command | whole process (s) | its own work (s) | ratio |")
    print("|---|---|---|---|")
    for name, pairs in rows.items():
        whole = statistics.median(p[0] for p in pairs)
        work = statistics.median(p[1] for p in pairs)
        print(f"| {name} | {whole:.2f} | {work:.2f} | {whole / work:.2f}× |")


if __name__ == "__main__":
    main()
