"""Set the answer's options (tasks/synthesis/answer.AnswerOptions) by
coordinate ascent over the TUNING halves of the judged answer sets.

    .venv/bin/python bench/tune_answer.py [--sets notes_en,debian_ref_zh,pydoc_topics,...] [--rounds 2]

From the current options, each option in turn takes each value of its grid
with the others held; the value that scores best is kept, and the rounds
repeat until nothing changes. The score is the mean, over the sets, of the
facts found within the answer's first 400 words, less a penalty for every
word a set's median answer runs over MEDIAN_WORDS (what a reader reads in
a minute). Only the tuning halves are read; the test halves and the
test-only sets are for bench/answers.py, after a change is chosen.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.ablations import figures, questions_by_half, summary  # noqa: E402
from bench.answers import TUNING_SETS  # noqa: E402

MEDIAN_WORDS = 300
PENALTY = 0.002  # per word over: 50 words too many cost a tenth of the facts

GRID = {
    "words": [250.0, 300.0],
    "weakest": [0.4, 0.5, 0.6, 0.7],
    "most_points": [4, 6, 8],
}


def objective(scored: dict[str, dict]) -> float:
    return sum(s["facts_in_answer"] - PENALTY * max(0.0, s["median_words"] - MEDIAN_WORDS)
               for s in scored.values()) / max(1, len(scored))


def main(argv: list[str] | None = None) -> int:
    from tasks.synthesis.extractive import ExtractiveOptions
    from tasks.synthesis.parameters import PARAMETERS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=TUNING_SETS)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    tuning = questions_by_half([n.strip() for n in args.sets.split(",") if n.strip()])["tune"]
    memo: dict = {}

    def scored(options) -> dict[str, dict]:
        if options not in memo:
            memo[options] = figures(tuning, PARAMETERS, replace(ExtractiveOptions(), answer=options))
        return memo[options]

    best = ExtractiveOptions().answer
    print(f"start {best}: {objective(scored(best)):.4f}", flush=True)
    for round_ in range(args.rounds):
        changed = False
        for name, values in GRID.items():
            for value in values:
                trial = replace(best, **{name: value})
                print(f"  {name}={value}: {objective(scored(trial)):.4f}", flush=True)
            chosen = max((replace(best, **{name: v}) for v in values), key=lambda o: objective(scored(o)))
            if objective(scored(chosen)) > objective(scored(best)) + 1e-9:
                best, changed = chosen, True
        print(f"round {round_ + 1}: {best} {objective(scored(best)):.4f}", flush=True)
        if not changed:
            break
    for set_name, s in scored(best).items():
        print(f"{set_name:22} {summary(s)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
