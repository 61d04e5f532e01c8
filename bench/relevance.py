"""Relevance evaluation: does `searchlake research` rank the pages that answer
the question first, and do its reports cite them?

    .venv/bin/python bench/relevance.py [--sets python_docs,pydoc_topics] [--limit N]
                                        [--out bench/out/relevance.json]
    .venv/bin/python bench/relevance.py --questions my_set.json --library /path/to/docs

A judged set is a JSON file (bench/relevance/*.json): {"name", "library"
(a folder, or null for the default corpus, Python's language reference),
"install" (how to get the folder), "questions": [{"id", "question",
"relevant": [page paths relative to the folder, or pydoc topic names]}]}.

The bundled sets:
  python_docs   30 questions over the Python 3.11 HTML documentation
                (Debian: `apt-get install -y python3.11-doc`, ~530 pages under
                /usr/share/doc/python3.11/html)
  pydoc_topics  14 questions over the default corpus (pydoc_data.topics)

For every question of a set, in a fresh SEARCHLAKE_HOME, offline (library only):
  pipeline       a full research run (the research flow, in this process);
                 its ranking is the task's consolidated `final_rank`
  question-only  the library provider searched once with the question
  bm25s          plain page-level BM25 (bm25s, Porter stemming, English
                 stopwords) over the same pages' extracted text: an
                 independent implementation as the baseline
and prints hit@5 (share of questions with a relevant page in the top 5),
MRR@10 (mean of 1/rank of the first relevant page within the top 10), the
runs that aborted, and for the reports: the share of first insights citing a
relevant page and the share of report quotes found verbatim (whitespace
normalized) in the cited source's stored text in the lake
(`report_citations` joined to `consolidated.content_text`; report.json when
the view does not exist). Results also go to --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

BENCH = Path(__file__).resolve().parent
SETS = BENCH / "relevance"
ROOT = BENCH.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# a loaded machine starts Prefect's temporary server slowly; its default 20 s limit fails the whole run
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

TOP_HIT, TOP_MRR = 5, 10


# -- judged sets ------------------------------------------------------------------

@dataclass
class JudgedSet:
    name: str
    library: str | None
    install: str | None
    questions: list[dict]
    role: str | None = None  # "test": built to test on only, never to tune; "tune": only to tune


def load_set(path: Path, library: str | None = None) -> JudgedSet:
    doc = json.loads(path.read_text(encoding="utf-8"))
    folder = library or doc.get("library")
    return JudgedSet(doc.get("name") or path.stem, folder, doc.get("install"), doc["questions"], doc.get("role"))


def missing_library(judged: JudgedSet) -> str | None:
    if judged.library is None or Path(judged.library).is_dir():
        return None
    how = f" Install it with: {judged.install}" if judged.install else ""
    return f"set {judged.name}: the documentation folder {judged.library} is missing.{how}"


def page_key(url: str, library: str | None) -> str:
    """The judged name of a ranked URL: a pydoc topic, or the page's path
    relative to the library folder."""
    parts = urlsplit(url)
    topic = parse_qs(parts.query).get("topic")
    if topic:
        return topic[0]
    path = unquote(parts.path)
    if library:
        root = str(Path(library).resolve()).rstrip("/") + "/"
        if path.startswith(root):
            return path[len(root):]
    return path


# -- metrics ------------------------------------------------------------------------

def first_relevant(ranked: list[str], relevant: set[str]) -> int | None:
    return next((i for i, key in enumerate(ranked, 1) if key in relevant), None)


def summarize(ranks: list[int | None]) -> dict:
    n = len(ranks) or 1
    return {"hit@5": round(sum(1 for r in ranks if r and r <= TOP_HIT) / n, 3),
            "mrr@10": round(sum(1 / r for r in ranks if r and r <= TOP_MRR) / n, 3),
            "questions": len(ranks)}


def normal(text: str) -> str:
    return " ".join((text or "").split())


# -- the three rankings ---------------------------------------------------------------

@dataclass
class QuestionRun:
    ranked: list[str] = field(default_factory=list)
    status: str = "complete"
    message: str = ""
    seconds: float = 0.0
    first_insight_sources: list[str] = field(default_factory=list)
    quotes: int = 0
    quotes_in_lake: int = 0


def run_pipeline(judged: JudgedSet, question: dict, task_id: str) -> QuestionRun:
    from flows.research import research_flow

    started = time.perf_counter()
    state = research_flow(question["question"], task_id=task_id, library=judged.library,
                          providers=["library"], return_state=True)
    run = QuestionRun(seconds=round(time.perf_counter() - started, 2))
    if not state.is_completed():
        run.status, run.message = "aborted", str(state.message or "")[:300]
    run.ranked = consolidated_ranking(task_id, judged.library)
    report_checks(run, task_id, judged.library)
    return run


def consolidated_ranking(task_id: str, library: str | None) -> list[str]:
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import run_query

    with open_catalog(Settings(), "relevance: ranking", read_only=True) as catalog:
        result = run_query(catalog, "SELECT url FROM consolidated WHERE task_id = ? ORDER BY final_rank LIMIT ?",
                           [task_id, TOP_MRR])
    return [page_key(row[0], library) for row in result.rows]


def report_checks(run: QuestionRun, task_id: str, library: str | None) -> None:
    """The first insight's cited pages, and how many report quotes the lake
    holds verbatim in the cited source's stored text."""
    from tasks.common.settings import Settings
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import run_query

    with open_catalog(Settings(), "relevance: report", read_only=True) as catalog:
        # a quote is checked against the stored text of its source (content_text, or the snippet)
        texts = {sid: f"{text or ''}\n{snippet or ''}" for sid, text, snippet in run_query(
            catalog, "SELECT source_id, content_text, snippet FROM consolidated WHERE task_id = ?", [task_id]).rows}
        try:
            citations = run_query(catalog, "SELECT citation_number, source_id, url, quote FROM report_citations "
                                  "WHERE task_id = ? ORDER BY citation_number", [task_id]).rows
        except Exception:  # the view is not there yet: read report.json's citations
            citations = None
        from_json, first = report_json_citations(catalog, task_id)
    run.first_insight_sources = [page_key(url, library) for url in first]
    quoted = [(sid, quote) for _, sid, _, quote in (from_json if citations is None else citations)
              if quote and quote.strip()]
    run.quotes = len(quoted)
    run.quotes_in_lake = sum(1 for sid, quote in quoted if normal(quote) in normal(texts.get(sid, "")))


def report_json_citations(catalog, task_id: str) -> tuple[list[tuple], list[str]]:
    """(citation rows, the first insight's cited URLs) from the task's report.json."""
    paths = catalog.rows("report_paths", [task_id])
    if not paths:
        return [], []
    doc = json.loads(catalog.lake.read_bytes(paths[0][2]))
    synthesis = doc.get("synthesis", doc)
    insights = synthesis.get("synthesized_insights") or []
    items = insights + (synthesis.get("key_data_points") or []) + (synthesis.get("contradictions_or_gaps") or [])
    citations = [(c.get("source_number"), c.get("source_id"), c.get("url"), c.get("quote"))
                 for item in items for c in item.get("citations") or []]
    first = [c.get("url") for c in (insights[0].get("citations") or [])] if insights else []
    return citations, first


def question_only(judged: JudgedSet, questions: list[dict]) -> list[list[str]]:
    """The library provider, searched once with each question as it is."""
    from tasks.common.settings import research_settings
    from tasks.retrieval.providers.base import Query
    from tasks.retrieval.providers.registry import build_provider

    provider = build_provider("library", research_settings(judged.library, ["library"]))
    provider.prepare()
    return [[page_key(hit.url, judged.library) for hit in
             provider.search(Query(query_id="q1", text=q["question"], intent="library"), TOP_MRR)]
            for q in questions]


def bm25s_rankings(judged: JudgedSet, questions: list[dict]) -> list[list[str]]:
    """Page-level BM25 by the bm25s package over the library's extracted pages."""
    import bm25s
    import Stemmer  # PyStemmer, a pinned dependency: the same Snowball stemmers

    pages = library_pages(judged)
    stemmer = Stemmer.Stemmer("porter")
    corpus = bm25s.tokenize([f"{title}\n{text}" for _, title, text in pages], stopwords="en",
                            stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    rankings = []
    for q in questions:
        query = bm25s.tokenize([q["question"]], stopwords="en", stemmer=stemmer, show_progress=False)
        k = min(TOP_MRR, len(pages))
        docs, scores = retriever.retrieve(query, k=k, show_progress=False)
        rankings.append([page_key(pages[i][0], judged.library) for i, s in zip(docs[0], scores[0]) if s > 0])
    return rankings


def bigram_rankings(judged: JudgedSet, questions: list[dict]) -> list[list[str]]:
    """Page-level BM25 (bm25s) over character bigrams of CJK text and
    lower-cased words of other text: the usual baseline for Chinese."""
    import bm25s

    pages = library_pages(judged)
    retriever = bm25s.BM25()
    retriever.index([_bigram_tokens(f"{title}\n{text}") for _, title, text in pages], show_progress=False)
    rankings = []
    for q in questions:
        k = min(TOP_MRR, len(pages))
        docs, scores = retriever.retrieve([_bigram_tokens(q["question"])], k=k, show_progress=False)
        rankings.append([page_key(pages[i][0], judged.library) for i, s in zip(docs[0], scores[0]) if s > 0])
    return rankings


_BIGRAM_UNITS = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+|[a-z0-9]+")


def _bigram_tokens(text: str) -> list[str]:
    out = []
    for run in _BIGRAM_UNITS.findall(text.lower()):
        if run.isascii():
            out.append(run)
        else:
            out += [run[i:i + 2] for i in range(len(run) - 1)] or [run]
    return out


def library_pages(judged: JudgedSet) -> list[tuple[str, str, str]]:
    """(url, title, text) of every page, extracted as the library extracts them."""
    from tasks.common.settings import research_settings
    from tasks.retrieval.providers.library.documents import DocumentFile, corpus_for
    from tasks.retrieval.providers.library.extraction import SkipFile, extract

    pages = []
    for found in corpus_for(research_settings(judged.library, ["library"])).walk():
        if not isinstance(found, DocumentFile):
            continue
        try:
            doc = extract(found.kind, found.read(), found.path)
        except (SkipFile, OSError):
            continue
        pages.append((found.url, doc.title, doc.text))
    return pages


# -- one set ---------------------------------------------------------------------------

def evaluate(judged: JudgedSet, limit: int | None, skip_pipeline: bool) -> dict:
    questions = judged.questions[:limit] if limit else judged.questions
    relevant = [set(q["relevant"]) for q in questions]
    started = time.perf_counter()
    methods: dict[str, list[list[str]]] = {
        "question-only": question_only(judged, questions),
        "bm25s": bm25s_rankings(judged, questions),
        "bm25s-bigram": bigram_rankings(judged, questions),
    }
    runs: list[QuestionRun] = []
    if not skip_pipeline:
        stamp = time.strftime("%H%M%S")
        for number, q in enumerate(questions, 1):
            run = run_pipeline(judged, q, f"eval-{judged.name}-{q['id']}-{stamp}"[:60])
            runs.append(run)
            print(f"  [{number}/{len(questions)}] {run.status:8} {run.seconds:5.1f}s "
                  f"rank {first_relevant(run.ranked, relevant[number - 1]) or '-':>2}  {q['question']}",
                  file=sys.stderr, flush=True)
        methods = {"pipeline": [r.ranked for r in runs], **methods}
    result = {"set": judged.name, "library": judged.library or "pydoc_data.topics (default corpus)",
              "methods": {}, "seconds": 0.0}
    for name, rankings in methods.items():
        ranks = [first_relevant(r, rel) for r, rel in zip(rankings, relevant)]
        result["methods"][name] = {**summarize(ranks), "ranks": dict(zip((q["id"] for q in questions), ranks))}
    if runs:
        reported = [r for r in runs if r.status == "complete"]
        result["pipeline"] = {
            "aborted": [{"id": q["id"], "message": r.message} for q, r in zip(questions, runs) if r.status != "complete"],
            "first_insight_relevant": round(sum(1 for r, rel in zip(runs, relevant)
                                                if set(r.first_insight_sources) & rel) / len(runs), 3),
            "quotes": sum(r.quotes for r in reported),
            "quotes_in_lake": sum(r.quotes_in_lake for r in reported),
            "quotes_in_lake_share": round(sum(r.quotes_in_lake for r in reported) /
                                          max(1, sum(r.quotes for r in reported)), 3),
            "seconds_per_run": round(sum(r.seconds for r in runs) / len(runs), 2),
        }
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def print_table(results: list[dict]) -> None:
    print(f"{'set':14} {'method':14} {'hit@5':>6} {'MRR@10':>7} {'n':>3}")
    for result in results:
        for name, figures in result["methods"].items():
            print(f"{result['set']:14} {name:14} {figures['hit@5']:6.3f} {figures['mrr@10']:7.3f} "
                  f"{figures['questions']:3d}")
        pipeline = result.get("pipeline")
        if pipeline:
            print(f"{'':14} report: first insight cites a relevant page {pipeline['first_insight_relevant']:.3f}; "
                  f"quotes verbatim in the lake {pipeline['quotes_in_lake']}/{pipeline['quotes']} "
                  f"({pipeline['quotes_in_lake_share']:.3f}); aborted runs {len(pipeline['aborted'])}; "
                  f"{pipeline['seconds_per_run']} s per run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="python_docs,pydoc_topics",
                        help="comma list of bundled sets (bench/relevance/<name>.json)")
    parser.add_argument("--questions", type=Path, help="a judged set file instead of --sets")
    parser.add_argument("--library", help="the documentation folder for --questions (overrides its 'library')")
    parser.add_argument("--limit", type=int, help="only the first N questions of each set")
    parser.add_argument("--skip-pipeline", action="store_true", help="only the single-search baselines")
    parser.add_argument("--out", type=Path, default=BENCH / "out" / "relevance.json")
    parser.add_argument("--home", type=Path, help="SEARCHLAKE_HOME to use (default: a fresh temporary folder)")
    args = parser.parse_args(argv)

    if args.questions:
        sets = [load_set(args.questions, args.library)]
    else:
        sets = [load_set(SETS / f"{name.strip()}.json") for name in args.sets.split(",") if name.strip()]
    problems = [p for p in map(missing_library, sets) if p]
    if problems:
        print("error: " + " ".join(problems), file=sys.stderr)
        return 2
    home = args.home or Path(tempfile.mkdtemp(prefix="searchlake-relevance-"))
    os.environ["SEARCHLAKE_HOME"] = str(home)
    results = []
    for judged in sets:
        print(f"set {judged.name}: {len(judged.questions)} questions, home {home}", file=sys.stderr, flush=True)
        results.append(evaluate(judged, args.limit, args.skip_pipeline))
    print_table(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": results},
                                   indent=2), encoding="utf-8")
    print(f"results: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
