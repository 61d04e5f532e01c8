"""Fit the evidence scorer's relevance weights (tasks/synthesis/parameters.py).

    .venv/bin/python bench/fit_scorer.py [--sets notes_en,debian_ref_zh,pydoc_topics] [--folds 5] [--write]

Over the TUNING halves of the judged answer sets only (bench/answers.py's
part_of; never a test half, never a test-only set), for every question
whose synthesis input bench/answers.py has cached (run it once first):

1. its candidate windows are scored (evidence.score) and each gets the
   feature vector of the part it is most relevant to, and a label: 1 when
   its sentence holds one of the question's nugget match strings (compared
   as bench/answers.py compares them);
2. a logistic regression (scikit-learn, L2, classes balanced) of label on
   the features is fitted, cross-validated by question (GroupKFold): on
   each held-out fold, the share of questions whose most relevant window
   holds a nugget (hit@1) and the mean reciprocal rank of the first that
   does (MRR@10), for the current weights and the fitted ones;
3. the weights fitted on all tuning questions, scaled so that `coverage`
   weighs 1 (the scale the synthesizer's margins assume), are printed;
   negative weights are set to 0 (a feature that hurts is left out);
4. the answer as a reader meets it (facts within its 400 words, its
   length) over the same tuning questions, with the current weights and
   the fitted ones.

--write puts the fitted weights into tasks/synthesis/parameters.py.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.answers import (CACHE, SETS, TUNING_SETS, answer_text, first_words, normal, nugget_found,  # noqa: E402
                           part_of, percentile, reader_words)
from bench.relevance import load_set  # noqa: E402

PARAMETERS_FILE = ROOT / "tasks" / "synthesis" / "parameters.py"
TOP = 10


def tuning_questions(names: list[str]) -> list[tuple[dict, dict]]:
    """(question, cached synthesis input) of every covered tuning question."""
    found = []
    for name in names:
        judged = load_set(SETS / f"{name}.json")
        if judged.role == "test":
            continue
        for q in judged.questions:
            path = CACHE / judged.name / f"{q['id']}.json"
            if q.get("kind") != "uncovered" and part_of(judged.name, judged.role, q["id"]) == "tune" and path.is_file():
                found.append((q, json.loads(path.read_text(encoding="utf-8"))))
    return found


def windows_of(question: dict, cached: dict):
    """Its windows' features (for the part each is most relevant to, and the
    sentence model's closeness) and labels."""
    from tasks.synthesis.base import Source
    from tasks.synthesis.candidates import candidates, windows
    from tasks.synthesis.evidence import score
    from tasks.synthesis.question import read_question

    asked = read_question(cached["question"])
    found = windows(candidates([Source(**s) for s in cached["sources"]]))
    if not found:
        return None
    scores = score(asked, found)
    parts = [p for p, part in enumerate(asked.parts) if not part.dimension]
    best = np.argmax(np.array([scores.relevance[p] for p in parts]), axis=0)
    features = np.array([np.append(scores.features[parts[k]][i], scores.closeness[i]) for i, k in enumerate(best)])
    matches = [normal(m) for n in question["nuggets"] for m in n["match"]]
    labels = np.array([any(m in normal(w.text) for m in matches) for w in found], dtype=int)
    return features, labels


def ranked_hits(weights: np.ndarray, data: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """hit@1 and MRR@10 of the windows ranked by `weights`."""
    hits, reciprocal = 0, 0.0
    for features, labels in data:
        order = np.argsort(-(features @ weights), kind="stable")
        first = next((k for k, i in enumerate(order[:TOP], 1) if labels[i]), None)
        hits += first == 1
        reciprocal += 1 / first if first else 0.0
    return round(hits / max(1, len(data)), 3), round(reciprocal / max(1, len(data)), 3)


def fitted(data: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression
    x = np.vstack([f for f, _ in data])
    y = np.concatenate([lab for _, lab in data])
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000).fit(x, y)
    weights = np.clip(model.coef_[0], 0.0, None)
    return weights / weights[0] if weights[0] > 0 else weights


def answer_figures(questions: list[tuple[dict, dict]], params) -> dict:
    from tasks.synthesis.base import Source
    from tasks.synthesis.extractive import extractive_synthesis
    nuggets = found = 0
    lengths = []
    for q, cached in questions:
        result = extractive_synthesis([Source(**s) for s in cached["sources"]], cached["question"], cached["plan"],
                                      params=params).model_dump(mode="json")
        text = answer_text(result)
        lengths.append(reader_words(text))
        read = first_words(text)
        nuggets += len(q["nuggets"])
        found += sum(nugget_found(n, read) for n in q["nuggets"])
    return {"facts_in_answer": round(found / max(1, nuggets), 3), "nuggets": f"{found}/{nuggets}",
            "median_words": percentile(lengths, 0.5), "p90_words": percentile(lengths, 0.9)}


def write_weights(names: list[str], weights: np.ndarray) -> None:
    text = PARAMETERS_FILE.read_text(encoding="utf-8")
    for name, value in zip(names, weights):
        text = re.sub(rf"(\n    {name}: float = )[0-9.]+", rf"\g<1>{value:.3g}", text, count=1)
    PARAMETERS_FILE.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    from sklearn.model_selection import GroupKFold
    from tasks.synthesis.evidence import FEATURES
    from tasks.synthesis.parameters import PARAMETERS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=TUNING_SETS)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="put the fitted weights into parameters.py")
    args = parser.parse_args(argv)

    questions = tuning_questions([n.strip() for n in args.sets.split(",") if n.strip()])
    scored = [(q, c, windows_of(q, c)) for q, c in questions]
    scored = [(q, c, w) for q, c, w in scored if w is not None]
    if not scored:
        print("error: no cached tuning question: run bench/answers.py first", file=sys.stderr)
        return 2
    names = [*FEATURES, "sentence"]
    current = np.array([getattr(PARAMETERS, name) for name in names])
    data = [w for _, _, w in scored]
    groups = np.arange(len(data))
    held_out = {"current": [], "fitted": []}
    for train, test in GroupKFold(n_splits=min(args.folds, len(data))).split(data, groups=groups):
        weights = fitted([data[i] for i in train])
        held_out["current"].append(ranked_hits(current, [data[i] for i in test]))
        held_out["fitted"].append(ranked_hits(weights, [data[i] for i in test]))
    print(f"{len(data)} tuning questions, {sum(int(lab.sum()) for _, lab in data)} windows holding a nugget "
          f"of {sum(len(lab) for _, lab in data)}")
    for name, folds in held_out.items():
        print(f"  {name:8} held-out hit@1 {np.mean([f[0] for f in folds]):.3f}  MRR@10 {np.mean([f[1] for f in folds]):.3f}")
    weights = fitted(data)
    print("  fitted weights: " + ", ".join(f"{n} {w:.3g}" for n, w in zip(names, weights)))
    print("  current weights: " + ", ".join(f"{n} {w:.3g}" for n, w in zip(names, current)))
    tuned = replace(PARAMETERS, **{n: float(w) for n, w in zip(names, weights)})
    print(f"  answer, current weights: {answer_figures([(q, c) for q, c, _ in scored], PARAMETERS)}")
    print(f"  answer, fitted weights:  {answer_figures([(q, c) for q, c, _ in scored], tuned)}")
    if args.write:
        write_weights(names, weights)
        print(f"wrote the fitted weights to {PARAMETERS_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
