"""Watches, measured: do the changes a watch records equal exactly what
changed behind it?

Two scenarios, each a watch run round after round in this process (the real
Prefect engine, Prefect's temporary server):

- library: a folder of documents; between rounds files are added, edited
  and deleted at random. Each round's recorded `source_added`,
  `source_dropped` and `content_changed` URLs must equal the files added,
  deleted and edited.
- web: a SearXNG on 127.0.0.1 replaying the JSON shape of its search API (docs/relevance.md)
  whose results change between rounds: results appear, disappear and get a
  new snippet. The same three kinds must equal what the server changed.

`source_moved` is a consequence (ranks are re-scored on every round), not
an action: it is checked for consistency with the rounds' kept ranks. The
rounds' durations are printed beside the research runs' own.

    .venv/bin/python -m bench.watch [--rounds 6] [--files 24] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

QUESTION = "How efficient are solar panels and battery storage?"
TOPICS = ["rooftop", "inverter", "lithium", "perovskite", "tracker", "microgrid", "thermal", "bifacial", "cobalt",
          "sodium", "flywheel", "hydro", "heat", "shade", "dust", "snow", "coastal", "desert", "farm", "balcony",
          "cabin", "boat", "van", "school", "hospital", "factory", "village", "island", "mountain", "city"]
TRACKED = ("source_added", "source_dropped", "content_changed")


def document(topic: str, version: int = 0) -> str:
    """A short document (one passage) about the question: every query finds it."""
    return (f"# Solar panels and battery storage: {topic}\n\n"
            f"Note {version} on {topic}: solar panels and battery storage efficiency, {topic} systems keep "
            f"{50 + version} percent of the energy of solar panels in battery storage.\n")


@dataclass
class Expected:
    """What a scenario changed between two rounds, as URLs per kind."""

    kinds: dict[str, set[str]] = field(default_factory=lambda: {kind: set() for kind in TRACKED})

    def add(self, kind: str, url: str) -> None:
        self.kinds[kind].add(url)


# -- the library scenario --------------------------------------------------------

class LibraryScenario:
    """A folder whose files are added, edited and deleted between rounds."""

    def __init__(self, folder: Path, files: int, rng: random.Random):
        self.folder, self.rng = folder, rng
        self.unused = list(TOPICS)
        rng.shuffle(self.unused)
        self.versions: dict[str, int] = {}
        folder.mkdir(parents=True, exist_ok=True)
        for _ in range(min(files, len(self.unused))):
            self._write(self.unused.pop(), 0)

    def url(self, topic: str) -> str:
        return (self.folder / f"{topic}.md").resolve().as_uri()

    def _write(self, topic: str, version: int) -> None:
        (self.folder / f"{topic}.md").write_text(document(topic, version), encoding="utf-8")
        self.versions[topic] = version

    def change(self, adds: int = 1, edits: int = 1, deletes: int = 1) -> Expected:
        expected = Expected()
        present = sorted(self.versions)
        self.rng.shuffle(present)
        for topic in present[:deletes]:
            (self.folder / f"{topic}.md").unlink()
            del self.versions[topic]
            expected.add("source_dropped", self.url(topic))
        for topic in present[deletes:deletes + edits]:
            self._write(topic, self.versions[topic] + 1)
            expected.add("content_changed", self.url(topic))
        for _ in range(min(adds, len(self.unused))):
            topic = self.unused.pop()
            self._write(topic, 0)
            expected.add("source_added", self.url(topic))
        return expected


# -- the web scenario ----------------------------------------------------------------

class SearxServer:
    """SearXNG's JSON API on 127.0.0.1, answering every query with the
    current results, and the pages behind them (/page/<topic>)."""

    def __init__(self, results: int, rng: random.Random):
        self.rng = rng
        self.unused = list(TOPICS)
        rng.shuffle(self.unused)
        self.versions = {self.unused.pop(): 0 for _ in range(min(results, len(self.unused)))}
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                server.requests += 1
                parts = urlsplit(self.path)
                if parts.path == "/search":
                    body, kind = json.dumps(server.answer(parse_qs(parts.query).get("q", [""])[0])), "application/json"
                elif parts.path.startswith("/page/") and parts.path[6:] in server.versions:
                    body, kind = server.page(parts.path[6:]), "text/html"
                else:
                    self.send_error(404)
                    return
                data = body.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", f"{kind}; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, topic: str) -> str:
        return f"{self.base}/page/{topic}"

    def answer(self, query: str) -> dict:
        results = [{"url": self.url(topic), "title": f"Solar panels and battery storage: {topic}",
                    "content": document(topic, version).splitlines()[2], "engine": "bench", "engines": ["bench"],
                    "score": 1.0, "category": "general", "publishedDate": None}
                   for topic, version in self.versions.items()]
        return {"query": query, "number_of_results": len(results), "results": results, "answers": [],
                "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}

    def page(self, topic: str) -> str:
        text = document(topic, self.versions[topic]).splitlines()[2]
        return f"<html><head><title>{topic}</title></head><body><article><p>{text}</p></article></body></html>"

    def change(self, adds: int = 1, edits: int = 1, deletes: int = 1) -> Expected:
        expected = Expected()
        present = sorted(self.versions)
        self.rng.shuffle(present)
        for topic in present[:deletes]:
            del self.versions[topic]
            expected.add("source_dropped", self.url(topic))
        for topic in present[deletes:deletes + edits]:
            self.versions[topic] += 1
            expected.add("content_changed", self.url(topic))
        for _ in range(min(adds, len(self.unused))):
            topic = self.unused.pop()
            self.versions[topic] = 0
            expected.add("source_added", self.url(topic))
        return expected

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- rounds and what they recorded -------------------------------------------------------

def start_watch(settings, name: str, params: dict) -> None:
    from schemas.watch import Watch, WatchParams
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import add_watch
    watch = Watch(name=name, question=QUESTION, interval_seconds=3600, params=WatchParams(**params))
    with open_catalog(settings, "bench: watch add") as catalog:
        add_watch(catalog, watch, None)


def recorded(settings, name: str, number: int) -> dict[str, set[str]]:
    """The round's recorded changes: URLs per kind (all kinds)."""
    from schemas.watch import KINDS, topic_of
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import round_changes
    with open_catalog(settings, "bench: changes", read_only=True) as catalog:
        changes = round_changes(catalog, topic_of(name), number)
    return {kind: {c.url for c in changes if c.kind == kind} for kind in KINDS}


def moves_consistent(settings, name: str, number: int) -> bool:
    """Every recorded move names the ranks the two rounds kept, and every
    source kept by both rounds at another rank is recorded as moved."""
    from schemas.watch import topic_of
    from tasks.lake.catalog import open_catalog
    from tasks.lake.watches import round_changes
    with open_catalog(settings, "bench: ranks", read_only=True) as catalog:
        ranks = {r: dict(catalog.con.execute(
            "SELECT url, final_rank FROM watch_round_sources WHERE task_id = ? AND round = ?",
            [topic_of(name), r]).fetchall()) for r in (number - 1, number)}
        moved = {c.url: (c.old_rank, c.new_rank) for c in round_changes(catalog, topic_of(name), number)
                 if c.kind == "source_moved"}
    expected = {url: (ranks[number - 1][url], rank) for url, rank in ranks[number].items()
                if url in ranks[number - 1] and ranks[number - 1][url] != rank}
    return moved == expected


def run_scenario(label: str, settings, name: str, params: dict, scenario, rounds: int) -> list[dict]:
    from flows.watch import watch_round
    start_watch(settings, name, params)
    rows = []
    for number in range(1, rounds + 1):
        expected = scenario.change() if number > 1 else Expected()
        started = time.monotonic()
        outcome = watch_round(name)
        seconds = time.monotonic() - started
        found = recorded(settings, name, number)
        exact = number == 1 or all(found[kind] == expected.kinds[kind] for kind in TRACKED)
        moves = number == 1 or moves_consistent(settings, name, number)
        rows.append({"scenario": label, "round": number, "seconds": round(seconds, 1), "exact": exact,
                     "moves_consistent": moves, "expected": {k: len(v) for k, v in expected.kinds.items()},
                     "recorded": {k: len(found[k]) for k in TRACKED}, "moved": len(found["source_moved"]),
                     "summary": outcome["summary"]})
        if not exact:
            rows[-1]["difference"] = {kind: {"missing": sorted(expected.kinds[kind] - found[kind]),
                                             "extra": sorted(found[kind] - expected.kinds[kind])}
                                      for kind in TRACKED}
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--files", type=int, default=24, help="documents (and web results) at the start")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    for key in [k for k in os.environ if k.startswith("SEARCHLAKE_")]:
        del os.environ[key]
    os.environ.update(SEARCHLAKE_HOME=str(home / "home"), SEARCHLAKE_AUTOSERVE="false",
                      SEARCHLAKE_ALLOW_PRIVATE_FETCH="true", PREFECT_LOGGING_LEVEL="WARNING")
    from tasks.common.settings import Settings
    rng = random.Random(args.seed)
    rows = run_scenario("library", Settings(), "bench-library",
                        {"library": str(home / "library"), "providers": ["library"], "target": 3, "max_results": 50},
                        LibraryScenario(home / "library", args.files, rng), args.rounds)
    web = SearxServer(args.files, rng)
    os.environ["SEARXNG_URL"] = web.base
    try:
        # every result the server gives, not the provider's first 10
        rows += run_scenario("web", Settings(), "bench-web",
                             {"providers": ["searxng"], "target": 3, "max_results": 50}, web, args.rounds)
    finally:
        web.close()
    exact = all(r["exact"] and r["moves_consistent"] for r in rows)
    print(f"{sum(r['exact'] for r in rows)}/{len(rows)} rounds recorded exactly what changed; "
          f"moves consistent in {sum(r['moves_consistent'] for r in rows)}/{len(rows)}; "
          f"round median {sorted(r['seconds'] for r in rows)[len(rows) // 2]} s"
          + ("" if exact else f" (the lake is kept for a look: {home})"))
    if exact:
        shutil.rmtree(home, ignore_errors=True)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
