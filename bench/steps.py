"""The benchmarks' steps, each run in a child process of its own with a
fresh SEARCHLAKE_HOME: how a step is started, timed (CPU of the step and its
workers) and measured (peak memory of its process tree), and how a landed
lake is copied to run a step on again. bench/run.py, bench/writers.py and
bench/catalogs.py and bench/library_scale.py define the steps and import this module; it imports none
of them (a child looks its step up by name).

    python bench/steps.py --step NAME --home H --bundles B --result R   (the child)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"


def cpu_seconds() -> float:
    """CPU time of this process and its (waited-for) worker processes."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime



# Each step by where it lives, imported in the child alone: the modules that
# define steps import this one, never the other way round.
STEPS = {"ingest": "bench.run:step_ingest", "consolidate": "bench.run:step_consolidate",
         "reconsolidate": "bench.run:step_consolidate", "baseline": "bench.run:step_baseline",
         "write": "bench.writers:step_write", "open": "bench.catalogs:step_open",
         "library_index": "bench.library_scale:step_index", "library_serve": "bench.library_scale:step_serve",
         "library_reindex": "bench.library_scale:step_reindex", "library_reload": "bench.library_scale:step_reload",
         "library_bm25s": "bench.library_scale:step_bm25s"}


def child_main(step: str, home: Path, bundles: Path, result_file: Path) -> int:
    module, _, name = STEPS[step].partition(":")
    result = getattr(importlib.import_module(module), name)(home, bundles)
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result["maxrss_self_mb"] = me / 1024
    result["maxrss_children_mb"] = kids / 1024
    result_file.write_text(json.dumps(result))
    return 0


def _tree_memory_bytes(root_pid: int) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) over root_pid and its descendants (Linux /proc).
    PSS shares copy-on-write pages between forked workers instead of counting
    them in each, so it is the honest total; RSS is the upper bound."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        parents[int(entry)] = int(fields[1])
    tree = {root_pid}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    rss = pss = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith(b"Pss:"):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return rss, pss


def start_step(step: str, home: Path, bundles: Path, result_file: Path,
               extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHLAKE_")}
    env["SEARCHLAKE_HOME"] = str(home)
    env.update(extra_env or {})
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--step", step, "--home", str(home),
           "--bundles", str(bundles), "--result", str(result_file)]
    return subprocess.Popen(cmd, cwd=result_file.parent, env=env)


def run_step(step: str, home: Path, bundles: Path, workdir: Path, extra_env: dict[str, str] | None = None,
             every: float = 0.02) -> dict:
    """The step's result, with its time and peak memory; its process tree's
    memory is sampled every `every` seconds (each sample reads all of /proc:
    a long step samples less often, to leave the cores to the step)."""
    result_file = workdir / f"{step}.json"
    os.sync()  # the previous step's dirty pages are not this step's to write back
    proc = start_step(step, home, bundles, result_file, extra_env)
    peak_rss = peak_pss = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_rss, peak_pss
        while not done.is_set():
            rss, pss = _tree_memory_bytes(proc.pid)
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            done.wait(every)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    done.set()
    sampler.join()
    if code != 0:
        raise SystemExit(f"step {step} failed with exit code {code}")
    result = json.loads(result_file.read_text())
    result["sampled_tree_rss_mb"] = peak_rss / 2**20
    result["sampled_tree_pss_mb"] = peak_pss / 2**20
    # ru_maxrss of the step process plus that of its largest worker: an upper
    # bound (shared pages counted twice), never below the sampled PSS peak.
    result["peak_rss_mb"] = max(result["maxrss_self_mb"] + result["maxrss_children_mb"],
                                result["sampled_tree_pss_mb"])
    return result


def link_copy(src: Path, dst: Path) -> None:
    """A lake snapshot to run a step on again: Parquet and raw files
    hard-linked (DuckLake never rewrites a file in place), everything else
    (the catalog database) copied."""
    def copy(a: str, b: str) -> None:
        if a.endswith((".parquet", ".json")) and "/lake/" in a:
            os.link(a, b)
        else:
            shutil.copy2(a, b)
    shutil.copytree(src, dst, copy_function=copy)



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one benchmark step, in this process")
    parser.add_argument("--step", choices=sorted(STEPS), required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--bundles", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    args = parser.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return child_main(args.step, args.home, args.bundles, args.result)


if __name__ == "__main__":
    sys.exit(main())
