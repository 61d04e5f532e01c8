"""Write synthetic SearchResultBundle files for one task (the benchmark's input).

    .venv/bin/python bench/generate.py --items 100000 --out /tmp/bundles [--seed 7]

Shape of the data, chosen to look like what agents land:
  * bundles of --items-per-bundle items (the last one may be shorter), one
    query each, query_ids q1, q2, ... (so natural order matters: q2 < q10);
  * URLs drawn from a pool of about 0.6 * N pages, so most sources are seen
    in several bundles; some draws carry tracking parameters (utm_*, gclid)
    or a different host case, which normalize to the same source;
  * ~80% of items carry a source_id computed by the contract's rule
    (schemas.urls.source_id_for), the rest leave it to the lake;
  * ~1% failed items (with error_code and often http_status), ~1% filtered;
  * titles ~60 and snippets ~150 characters of English-like text.
The output is a pure function of (--items, --items-per-bundle, --seed).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from schemas.urls import source_id_for  # noqa: E402

TASK_ID = "bench"
POOL_FACTOR = 0.6
SOURCE_ID_SHARE = 0.80
FAILED_SHARE = 0.01
FILTERED_SHARE = 0.01
PROVIDERS = ("tavily", "brave", "searxng", "openalex", "semantic_scholar", "thenewsapi")
INTENTS = ("web", "academic", "news", "docs")
ERRORS = (("timeout", None), ("http_error", 403), ("http_error", 404), ("http_error", 500),
          ("http_error", 503), ("dns_error", None), ("tls_error", None), ("too_large", None))
TLDS = ("com", "org", "net", "io", "dev", "edu", "gov", "co.uk", "de", "fr")
WORDS = """
data lake parquet query engine columnar storage index search ranking relevance freshness
authority source citation evidence research paper article guide tutorial reference manual
python rust duckdb arrow pipeline batch stream schema contract validation bundle provider
result snippet title crawl fetch page document corpus benchmark latency throughput memory
performance scalable distributed cluster node partition shard replica consistency atomic
transaction commit rollback recovery checkpoint cursor offset merge dedup deduplicate
normalize canonical identity hash digest window function aggregate group sort order join
filter projection predicate pushdown statistics histogram cardinality estimate optimizer
plan execution vectorized parallel thread process worker queue scheduler flow task retry
timeout error failure quarantine audit log metric dashboard analyst report insight trend
climate energy policy health medicine economics market finance education history science
biology chemistry physics astronomy geology ocean forest river city transport housing
the a of and to in for with on by from about how what why when which new best open free
""".split()
STEMS = ("docs", "blog", "news", "articles", "papers", "guide", "wiki", "posts", "learn", "reference")


def _sentence(rng: random.Random, min_chars: int, max_chars: int) -> str:
    target = rng.randint(min_chars, max_chars)
    words: list[str] = []
    length = -1
    while length < target:
        chunk = rng.choices(WORDS, k=8)
        for word in chunk:
            words.append(word)
            length += len(word) + 1
            if length >= target:
                break
    text = " ".join(words)
    return text[0].upper() + text[1:]


class Pool:
    """Pages, made on first use: (canonical url, source_id, title, snippet, domain)."""

    def __init__(self, size: int, seed: int):
        self.size = size
        self.seed = seed
        self.pages: dict[int, tuple[str, str, str, str]] = {}
        domain_rng = random.Random(f"{seed}:domains")
        self.domains = [
            f"{'www.' if domain_rng.random() < 0.4 else ''}"
            f"{domain_rng.choice(WORDS)}{domain_rng.choice(WORDS)}{i}.{domain_rng.choice(TLDS)}"
            for i in range(max(1, size // 40))
        ]

    def page(self, n: int) -> tuple[str, str, str, str]:
        page = self.pages.get(n)
        if page is None:
            rng = random.Random(f"{self.seed}:page:{n}")
            domain = self.domains[n % len(self.domains)]
            slug = "-".join(rng.choices(WORDS, k=rng.randint(2, 6)))
            url = f"https://{domain}/{rng.choice(STEMS)}/{slug}-{n}"
            if rng.random() < 0.15:
                url += f"?id={rng.randint(1, 99999)}&lang=en"
            title = _sentence(rng, 30, 90)
            snippet = _sentence(rng, 120, 180) + "."
            page = (url, source_id_for(url), title, snippet)
            self.pages[n] = page
        return page


def _variant(rng: random.Random, url: str) -> str:
    """The same page as another agent may report it (same source_id)."""
    roll = rng.random()
    if roll < 0.10:
        sep = "&" if "?" in url else "?"
        return f"{url}{sep}utm_source=agent&utm_medium=search"
    if roll < 0.13:
        return url + "#section-2"
    if roll < 0.15:
        scheme, rest = url.split("://", 1)
        host, path = rest.split("/", 1)
        return f"{scheme}://{host.upper()}:443/{path}"
    return url


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def bundles(items: int, per_bundle: int, seed: int):
    """Yield (query_id, bundle dict) for `items` items in total."""
    rng = random.Random(seed)
    pool = Pool(max(1, int(items * POOL_FACTOR)), seed)
    start = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
    made = 0
    q = 0
    while made < items:
        q += 1
        count = min(per_bundle, items - made)
        executed = start + timedelta(seconds=37 * q + rng.randint(0, 30))
        provider = rng.choice(PROVIDERS)
        results = []
        for i in range(count):
            url, sid, title, snippet = pool.page(rng.randrange(pool.size))
            relevance = round(rng.random(), 4)
            freshness = round(rng.random(), 4)
            authority = round(rng.random(), 4)
            item = {}
            if rng.random() < SOURCE_ID_SHARE:
                item["source_id"] = sid
            item.update({
                "rank": i + 1,
                "url": _variant(rng, url),
                "title": title,
                "snippet": snippet,
                "captured_at": _iso(executed + timedelta(seconds=rng.randint(0, 120))),
                "score_relevance": relevance,
                "score_freshness": freshness,
                "score_authority": authority,
                "score_final": round(0.6 * relevance + 0.2 * freshness + 0.2 * authority, 4),
                "status": "ok",
            })
            if rng.random() < 0.3:
                item["published_at"] = _iso(executed - timedelta(days=rng.randint(1, 3000)))
            if rng.random() < 0.5:
                item["language"] = "en"
            roll = rng.random()
            if roll < FAILED_SHARE:
                code, http = rng.choice(ERRORS)
                item["status"] = "failed"
                item["error_code"] = code
                if http:
                    item["http_status"] = http
            elif roll < FAILED_SHARE + FILTERED_SHARE:
                item["status"] = "filtered"
            results.append(item)
        made += count
        query_id = f"q{q}"
        yield query_id, {
            "task_id": TASK_ID,
            "query_id": query_id,
            "query_text": _sentence(rng, 20, 60).lower(),
            "query_intent": rng.choice(INTENTS),
            "provider": provider,
            "executed_at": _iso(executed),
            "results": results,
        }


def generate(items: int, out: Path, *, per_bundle: int = 1000, seed: int = 7) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for query_id, bundle in bundles(items, per_bundle, seed):
        path = out / f"{query_id}.json"
        path.write_text(json.dumps(bundle, separators=(",", ":")), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, required=True, help="items in total")
    parser.add_argument("--items-per-bundle", type=int, default=1000)
    parser.add_argument("--out", type=Path, required=True, help="folder for the bundle files")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.items < 1 or args.items_per_bundle < 1:
        parser.error("--items and --items-per-bundle must be positive")
    paths = generate(args.items, args.out, per_bundle=args.items_per_bundle, seed=args.seed)
    print(f"wrote {len(paths)} bundles ({args.items} items) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
