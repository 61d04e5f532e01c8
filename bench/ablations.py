"""Do the scorer's features pay? Each switched off in turn, the answers
synthesized again over the cached inputs (bench/answers.py --resynth's
cache), scored on the tuning halves, the test halves and the test-only sets.

    .venv/bin/python bench/ablations.py [--sets ...] [--only heading,section]

A feature that costs nothing on the test halves when it is off does not pay,
and is removed from the code (bench/HISTORY.md lists what was measured).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.answers import CACHE, EVERY_SET, SENTENCE_VECTORS, SETS, _scored, part_of  # noqa: E402
from bench.relevance import JudgedSet, load_set  # noqa: E402

def ablation(name: str):
    """The scorer's parameters with the feature `name` switched off."""
    from tasks.synthesis.parameters import PARAMETERS
    params = {"heading-asks": {"heading_asks": 0.0}, "carried": {"carried": 0.0}, "framing": {"framing_credit": 0.0},
              "meaning": {"meaning_credit": 0.0}, "sentence-model": {"sentence": 0.0, "sentence_support": 0.0},
              "rank-prior": {"rank": 0.0}, "section": {"section": 0.0}, "heading": {"heading": 0.0},
              "lexical": {"lexical": 0.0}, "dense": {"dense": 0.0, "dense_support": 0.0},
              "answer-type": {"answer_type": 0.0, "type_support": 0.0}}[name]
    return replace(PARAMETERS, **params)


ABLATIONS = ["none", "heading-asks", "carried", "framing", "meaning", "sentence-model", "rank-prior", "section",
             "heading", "lexical", "dense", "answer-type"]


def questions_by_half(names: list[str]) -> dict[str, list[tuple[JudgedSet, dict, dict | None]]]:
    """Every question of the sets named, with its cached synthesis input, by half."""
    halves: dict[str, list] = {"tune": [], "test": []}
    for name in names:
        judged = load_set(SETS / f"{name}.json")
        for q in judged.questions:
            path = CACHE / judged.name / f"{q['id']}.json"
            cached = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            halves[part_of(judged.name, judged.role, q["id"])].append((judged, q, cached))
    return halves


def figures(items: list[tuple[JudgedSet, dict, dict | None]], params, opts=None) -> dict[str, dict]:
    """bench/answers.py's figures of each set among `items`, their answers
    synthesized again with `params` (and the extractive options `opts`)."""
    from tasks.synthesis.base import Source
    from tasks.synthesis.extractive import ExtractiveOptions, extractive_synthesis
    from tasks.common.sentence_model import vectors_kept_in
    opts = opts or ExtractiveOptions()
    by_set: dict[str, tuple[JudgedSet, list]] = {}
    with vectors_kept_in(SENTENCE_VECTORS):
        for judged, q, cached in items:
            result = None if cached is None else extractive_synthesis(
                [Source(**s) for s in cached["sources"]], cached["question"], cached["plan"], opts,
                params).model_dump(mode="json")
            by_set.setdefault(judged.name, (judged, []))[1].append((q, result))
    return {name: _scored(judged, pairs) for name, (judged, pairs) in by_set.items()}


def summary(scored: dict) -> str:
    return (f"facts {scored['facts_in_answer']:.3f} ({scored['nuggets_in_answer']}) median {scored['median_words']:g} "
            f"p90 {scored['p90_words']:g} first {scored['first_insight']} cautions {scored['cautions_on_covered']} "
            f"gaps {scored['honest_gaps']}")


def main(argv: list[str] | None = None) -> int:
    from tasks.synthesis.parameters import PARAMETERS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=EVERY_SET)
    parser.add_argument("--only", help="comma-separated ablations (default: all)")
    parser.add_argument("--halves", default="tune,test")
    args = parser.parse_args(argv)
    halves = questions_by_half([n.strip() for n in args.sets.split(",") if n.strip()])
    names = ["none", *[n.strip() for n in args.only.split(",")]] if args.only else ABLATIONS
    results = {}
    for name in names:
        params = ablation(name) if name != "none" else PARAMETERS
        results[name] = {half: figures(halves[half], params) for half in args.halves.split(",")}
        for half, sets in results[name].items():
            for set_name, scored in sets.items():
                print(f"{name:16} {half:4} {set_name:22} {summary(scored)}", flush=True)
    (BENCH / "out").mkdir(exist_ok=True)
    (BENCH / "out" / "ablations.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
