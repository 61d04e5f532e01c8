"""The library at scale: a folder of real documentation pages indexed,
searched and re-indexed, beside bm25s indexing and querying the same pages,
in one run on one machine.

    .venv/bin/python bench/library_scale.py [--pages 100000] [--queries 200] [--work DIR] [--steps serve]

The pages are every HTML, text and Markdown page of the documentation this
machine holds (ROOTS: Debian's doc packages, LibreOffice's and GIMP's help,
the Rust toolchains' documentation), in that order, up to --pages; they are
hard-linked (copied across file systems) into a folder under a temp home.
Each step runs in a child process of its own (bench/steps.py), which gives
its time and its peak memory (the process tree's, sampled, and ru_maxrss):

  * index: `index_library` over the folder as `searchlake` runs it on a
    first research (an index an earlier run left in --work is removed
    first) — walk, read, extract, cut into passages, tokenize, embed,
    store, build BM25; pages a second of the whole;
  * serve: the index opened as a server opens it, then --queries queries
    (the questions of bench/answers' sets, English and Chinese) searched
    as the library provider searches a planned query (lexical and dense
    ranking, hits with their snippets and stored excerpts; a query asked
    with the task's question adds the sentence model, which reads the same
    60 passages at any library size and is measured in bench/README's
    "What the meaning costs"): p50 and p95 of a query;
  * reindex: 100 pages changed (a paragraph appended to each, written as a
    new file so the linked original stays as it was), then `index_library`
    again;
  * reload: a serving process opens the index, another process re-indexes
    100 changed pages, and the serving process asks for the index again
    (it reads only the new segment);
  * bm25s: the baseline, the same pages read and extracted by the same
    extraction, then bm25s (Porter stemmer, English stopwords, page level)
    indexing them and answering the same queries.

The figures are printed and saved to bench/out/library_scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.steps import OUT, run_step  # noqa: E402

ROOTS = [Path("/usr/share/doc"), Path("/usr/share/libreoffice/help"), Path("/usr/share/gimp/2.0/help"),
         *sorted(Path.home().glob(".rustup/toolchains/*/share/doc"))]
SUFFIXES = (".html", ".htm", ".txt", ".md")
CHANGED = 100
SAMPLE_EVERY = 0.5  # s between samples of a step's memory (ru_maxrss gives its exact peak)
QUERIES_FILE = "queries.json"
STEP_NAMES = ("index", "serve", "reindex", "reload", "bm25s")  # in this order: reindex and reload change pages


# -- the pages --------------------------------------------------------------------

def gather(folder: Path, most: int) -> int:
    """Up to `most` documentation pages linked into `folder`, one sub-folder per root; how many."""
    count = 0
    for number, root in enumerate(ROOTS):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if count >= most:
                    return count
                source = Path(dirpath) / name
                if not name.endswith(SUFFIXES) or source.is_symlink() or not source.is_file():
                    continue
                target = folder / f"{number}-{root.name}" / source.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(source, target)
                except OSError:
                    shutil.copyfile(source, target)
                count += 1
    return count


def questions(most: int) -> list[str]:
    """The questions of the judged answer sets, alternating between the sets, up to `most`."""
    lists = [[q["question"] for q in json.loads(path.read_text(encoding="utf-8"))["questions"]]
             for path in sorted((BENCH / "answers").glob("*.json"))]
    mixed = [q for row in zip(*lists) for q in row] + [q for qs in lists for q in qs[min(map(len, lists)):]]
    return mixed[:most]


def change_pages(folder: Path, count: int) -> list[Path]:
    """`count` pages spread over the folder, each rewritten as a new file with a paragraph more."""
    pages = sorted(p for p in folder.rglob("*") if p.is_file())
    chosen = pages[::max(1, len(pages) // count)][:count]
    for page in chosen:
        data = page.read_bytes()
        page.unlink()  # a hard link: the original page stays as it was
        page.write_bytes(data + b"\n\nA paragraph added to this page to change it.\n")
    return chosen


# -- the steps, each in a child process (bench/steps.py) ----------------------------

def _settings(home: Path, library: Path):
    from tasks.common.settings import Settings
    return Settings(home=home, library=str(library))


def step_index(home: Path, library: Path) -> dict:
    """A first index: an index an earlier run left in the home is removed first."""
    from tasks.retrieval.providers.library.documents import corpus_for
    from tasks.retrieval.providers.library.index import index_library
    from tasks.retrieval.providers.library.store import store_dir
    settings = _settings(home, library)
    shutil.rmtree(store_dir(settings, corpus_for(settings)), ignore_errors=True)
    started = time.perf_counter()
    report = index_library(settings)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "documents": report.documents, "skipped": len(report.skipped)}


def step_serve(home: Path, library: Path) -> dict:
    from tasks.retrieval.providers.base import Query
    from tasks.retrieval.providers.library.documents import corpus_for
    from tasks.retrieval.providers.library.index import open_index
    from tasks.retrieval.providers.library.provider import LibraryProvider
    settings = _settings(home, library)
    started = time.perf_counter()
    index = open_index(settings, corpus_for(settings))
    opened = time.perf_counter() - started
    provider = LibraryProvider(settings)
    times, found = [], []
    for n, text in enumerate(json.loads((home / QUERIES_FILE).read_text(encoding="utf-8"))):
        started = time.perf_counter()
        hits = provider.search(Query(f"q{n}", text, "library"), 10)
        times.append(time.perf_counter() - started)
        found.append([hit.url for hit in hits])
    return {"open_seconds": opened, "passages": index.passages, "query_seconds": times,
            "answered": sum(map(bool, found)), "hits": found}


def step_reindex(home: Path, library: Path) -> dict:
    from tasks.retrieval.providers.library.index import index_library
    started = time.perf_counter()
    report = index_library(_settings(home, library))
    return {"seconds": time.perf_counter() - started, "updated": report.updated, "added": report.added,
            "segments": getattr(report, "segments", None)}


def step_reload(home: Path, library: Path) -> dict:
    """A serving process holds the index; another process re-indexes 100 changed pages; the
    serving process then asks for the index again."""
    from tasks.retrieval.providers.library.documents import corpus_for
    from tasks.retrieval.providers.library.index import open_index
    settings = _settings(home, library)
    started = time.perf_counter()
    held = open_index(settings, corpus_for(settings))
    opened = time.perf_counter() - started
    change_pages(library, CHANGED)
    script = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
              "from tasks.common.settings import Settings; "
              "from tasks.retrieval.providers.library.index import index_library; "
              "index_library(Settings(home=Path(sys.argv[2]), library=sys.argv[3]))")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", script, str(ROOT), str(home), str(library)], check=True)
    reindexed = time.perf_counter() - started
    started = time.perf_counter()
    again = open_index(settings, corpus_for(settings))
    return {"open_seconds": opened, "reindex_process_seconds": reindexed,
            "reload_seconds": time.perf_counter() - started, "reloaded": again is not held}


def step_bm25s(home: Path, library: Path) -> dict:
    import bm25s
    import Stemmer

    from tasks.retrieval.providers.library.documents import Skip, walk_folder
    from tasks.retrieval.providers.library.extraction import SkipFile, extract
    started = time.perf_counter()
    texts = []
    for found in walk_folder(library.resolve()):
        if isinstance(found, Skip):
            continue
        try:
            page = extract(found.kind, found.read(), found.path)
        except (SkipFile, OSError):  # as the library skips it
            continue
        texts.append(f"{page.title}\n{page.text}")
    read = time.perf_counter() - started
    stemmer = Stemmer.Stemmer("porter")
    started = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    indexed = time.perf_counter() - started
    times = []
    for text in json.loads((home / QUERIES_FILE).read_text(encoding="utf-8")):
        started = time.perf_counter()
        retriever.retrieve(bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False),
                           k=10, show_progress=False)
        times.append(time.perf_counter() - started)
    return {"read_seconds": read, "index_seconds": indexed, "documents": len(texts), "query_seconds": times}


# -- the run ---------------------------------------------------------------------------

def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work", type=Path, help="keep the pages and the index in this folder (reused when it "
                        "holds them) instead of a temp folder removed at the end")
    parser.add_argument("--steps", default=",".join(STEP_NAMES), help=f"some of {','.join(STEP_NAMES)}")
    args = parser.parse_args(argv)
    steps = [name.strip() for name in args.steps.split(",") if name.strip()]
    if not set(steps) <= set(STEP_NAMES):
        parser.error(f"--steps: choose among {', '.join(STEP_NAMES)}")
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return measure(args.work.resolve(), args.pages, args.queries, steps)
    with tempfile.TemporaryDirectory(prefix="searchlake-library-scale-") as tmp:
        return measure(Path(tmp), args.pages, args.queries, steps)


def measure(work: Path, most: int, queries: int, steps: list[str]) -> int:
    library, home = work / "library", work / "home"
    home.mkdir(exist_ok=True)
    if library.is_dir():
        pages = sum(1 for p in library.rglob("*") if p.is_file())
        print(f"{pages} pages in {library}", flush=True)
    else:
        pages = gather(library, most)
        print(f"{pages} pages linked into {library}", flush=True)
    (home / QUERIES_FILE).write_text(json.dumps(questions(queries)), encoding="utf-8")
    results: dict = {"pages": pages}
    for name in steps:
        if name == "reindex":
            change_pages(library, CHANGED)
        results[name] = result = run_step(f"library_{name}", home, library, work, every=SAMPLE_EVERY)
        print(f"{name}: {_line(name, result)}", flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "library_scale.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


def _line(name: str, result: dict) -> str:
    peak = f"peak {result['peak_rss_mb']:.0f} MB"
    if name == "index":
        return (f"{result['documents']} documents ({result['skipped']} files skipped) in {result['seconds']:.1f} s "
                f"({result['documents'] / result['seconds']:.0f} pages/s), {peak}")
    if name == "serve":
        return (f"opened in {result['open_seconds']:.2f} s, {result['passages']} passages, {_latency(result)}, "
                f"{result['answered']}/{len(result['query_seconds'])} queries found pages, {peak}")
    if name == "reindex":
        return f"{CHANGED} pages changed: {result['seconds']:.1f} s ({result['updated']} updated), {peak}"
    if name == "reload":
        return (f"a server opened the index in {result['open_seconds']:.2f} s; another process re-indexed "
                f"{CHANGED} changed pages in {result['reindex_process_seconds']:.1f} s; the server had the new "
                f"index in {result['reload_seconds']:.2f} s, {peak}")
    return (f"read and extracted {result['documents']} pages in {result['read_seconds']:.1f} s, indexed in "
            f"{result['index_seconds']:.1f} s, {_latency(result)}, {peak}")


def _latency(result: dict) -> str:
    times = result["query_seconds"]
    return f"query p50 {1000 * statistics.median(times):.1f} ms p95 {1000 * percentile(times, 0.95):.1f} ms"


if __name__ == "__main__":
    raise SystemExit(main())
