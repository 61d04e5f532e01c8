"""Set Parameters.named_zipf — how rare in its language a word of the
question must be to count as a name the sources lack (the report's
caution, tasks/synthesis/evidence.py) — over the TUNING halves of the
judged answer sets.

    .venv/bin/python bench/fit_caution.py [--sets notes_en,debian_ref_zh,...]

Each value of the grid synthesizes the cached inputs again; the value kept
makes the fewest wrong calls: cautions on covered questions plus uncovered
questions answered without one (ties go to the larger value, the more
honest gaps). The test halves and the test-only sets are for
bench/answers.py, after the value is chosen.
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

from bench.ablations import figures, questions_by_half  # noqa: E402
from bench.answers import TUNING_SETS  # noqa: E402

GRID = (3.0, 3.25, 3.5, 3.75, 4.0)


def wrong_calls(scored: dict[str, dict]) -> tuple[int, int, int, int]:
    """(cautions on covered, covered, honest gaps, uncovered) over the sets."""
    totals = [0, 0, 0, 0]
    for s in scored.values():
        for at, figure in ((0, "cautions_on_covered"), (2, "honest_gaps")):
            said, of = map(int, s[figure].split("/"))
            totals[at] += said
            totals[at + 1] += of
    return tuple(totals)


def main(argv: list[str] | None = None) -> int:
    from tasks.synthesis.parameters import PARAMETERS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=TUNING_SETS)
    args = parser.parse_args(argv)
    tuning = questions_by_half([n.strip() for n in args.sets.split(",") if n.strip()])["tune"]
    best = None
    for value in GRID:
        cautions, covered, gaps, uncovered = wrong_calls(figures(tuning, replace(PARAMETERS, named_zipf=value)))
        wrong = cautions + uncovered - gaps
        print(f"named_zipf {value}: cautions on covered {cautions}/{covered}, honest gaps {gaps}/{uncovered}, "
              f"wrong calls {wrong}", flush=True)
        if best is None or wrong <= best[0]:
            best = (wrong, value)
    print(f"keep named_zipf = {best[1]} (now {PARAMETERS.named_zipf})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
