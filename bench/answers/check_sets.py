"""Check the answer sets (bench/answers/*.json).

    .venv/bin/python bench/answers/check_sets.py [--strict] [set.json ...]

For every set: each relevant page exists and has text; every nugget's match
strings occur (case-insensitive, whitespace collapsed, NFKC on both sides) in
the extracted text of at least one of the question's relevant pages (for a
set whose library is null: the pydoc topic's text); covered questions have
relevant pages and 1-4 nuggets; uncovered questions have neither.

Pages the product's extractor skips (for example as "a navigation page") are
still checked, on their text with that test turned off, and reported as
warnings; --strict makes warnings failures. Exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tasks.retrieval.providers.library import documents, extraction  # noqa: E402

KINDS = {"lookup", "measure", "procedure", "multi-part", "yes-no", "definition", "uncovered"}
CJK = re.compile(r"[\u3400-\u9fff]")


def norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def page_text(library: Path | None, page: str, warnings: list[str]) -> str | None:
    """The page's extracted text, or None when it does not exist."""
    if library is None:
        from pydoc_data import topics

        if page not in topics.topics:
            return None
        return extraction.extract("pydoc", topics.topics[page].encode("utf-8"), page).text
    path = library / page
    if not path.is_file():
        return None
    kind = documents.SUFFIX_KINDS.get(path.suffix.lower())
    if kind is None:
        warnings.append(f"{page}: file type not indexed by the product")
        kind = "text"
    data = path.read_bytes()
    try:
        return extraction.extract(kind, data, str(path)).text
    except extraction.SkipFile as skipped:
        warnings.append(f"{page}: the product's extractor skips it ({skipped})")
    saved = extraction._mostly_links
    extraction._mostly_links = lambda root: False
    try:
        return extraction.extract(kind, data, str(path)).text
    except extraction.SkipFile:
        return ""
    finally:
        extraction._mostly_links = saved


def match_size_note(match: str) -> str | None:
    """Match strings should be short: 4-15 characters when Chinese (a run of
    Latin letters, digits and symbols counts as one), 3-12 words otherwise.
    Slightly outside those bounds is tolerated; further out is a warning."""
    if CJK.search(match):
        size = len(re.findall(r"[\u3400-\u9fff]|[^\s\u3400-\u9fff\u3000-\u303f\uff00-\uffef]+", match))
        return None if 3 <= size <= 18 else f"{size} characters"
    words = len(match.split())
    return None if 1 <= words <= 14 else f"{words} words"


def check(path: Path) -> tuple[dict, list[str], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    failures: list[str] = []
    warnings: list[str] = []
    for key in ("name", "description", "language", "questions"):
        if key not in data:
            failures.append(f"missing key {key!r}")
    library = data.get("library")
    if library is not None:
        library = Path(library)
        if not library.is_absolute():
            library = ROOT / library
        if not library.is_dir():
            failures.append(f"library folder not found: {library}")
            return {"questions": 0}, failures, warnings
    texts: dict[str, str | None] = {}
    counts = {"questions": 0, "covered": 0, "uncovered": 0, "nuggets": 0, "matches": 0}
    seen: set[str] = set()
    for question in data.get("questions", []):
        qid = question.get("id", "?")
        counts["questions"] += 1
        if qid in seen:
            failures.append(f"{qid}: duplicate id")
        seen.add(qid)
        if not question.get("question", "").strip():
            failures.append(f"{qid}: empty question")
        kind = question.get("kind")
        if kind not in KINDS:
            failures.append(f"{qid}: unknown kind {kind!r}")
        relevant = question.get("relevant", [])
        nuggets = question.get("nuggets", [])
        if kind == "uncovered":
            counts["uncovered"] += 1
            if relevant or nuggets:
                failures.append(f"{qid}: an uncovered question lists relevant pages or nuggets")
            continue
        counts["covered"] += 1
        if not relevant:
            failures.append(f"{qid}: a covered question without relevant pages")
        if not 1 <= len(nuggets) <= 4:
            failures.append(f"{qid}: {len(nuggets)} nuggets (want 1-4)")
        pages = []
        for page in relevant:
            if page not in texts:
                texts[page] = page_text(library, page, warnings)
            if texts[page] is None:
                failures.append(f"{qid}: relevant page not found: {page}")
            else:
                pages.append(norm(texts[page]))
        for nugget in nuggets:
            counts["nuggets"] += 1
            if not nugget.get("fact", "").strip():
                failures.append(f"{qid}: a nugget without a fact")
            matches = nugget.get("match", [])
            if not matches:
                failures.append(f"{qid}: nugget {nugget.get('fact')!r} has no match strings")
            for match in matches:
                counts["matches"] += 1
                if not any(norm(match) in text for text in pages):
                    failures.append(f"{qid}: not found in any relevant page: {match!r}")
                note = match_size_note(match)
                if note:
                    warnings.append(f"{qid}: match {match!r} is {note}")
    return counts, failures, warnings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", type=Path, help="set files (default: bench/answers/*.json)")
    parser.add_argument("--strict", action="store_true", help="treat warnings as failures")
    args = parser.parse_args()
    paths = args.sets or sorted(HERE.glob("*.json"))
    failed = False
    for path in paths:
        counts, failures, warnings = check(path)
        if args.strict:
            failures += warnings
            warnings = []
        summary = ", ".join(f"{key} {value}" for key, value in counts.items())
        print(f"{path.name}: {summary}: {'FAIL' if failures else 'ok'}")
        for warning in dict.fromkeys(warnings):
            print(f"  warning: {warning}")
        for failure in failures:
            print(f"  FAIL: {failure}")
        failed = failed or bool(failures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
