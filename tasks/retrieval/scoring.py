"""Scores of one search hit, each in [0, 1].

score_relevance
    Relevance to the task's research question, on one scale for every query
    and provider of the task (a one-word query's best hit is not thereby
    relevant). The provider's own judgement of the question
    (`Hit.question_score`, clamped to [0, 1]) when it has one — the library
    scores every hit with the question itself, whatever query found it.
    Otherwise lexical, against the question: Q = the question's distinct
    terms (tasks/common/text.py term_set: stopwords out, Porter-stemmed; CJK
    runs as character bigrams, so Chinese works without a segmenter), T = the
    title's terms, S = the snippet's terms (the start of content_text when
    there is no snippet):
        relevance = 0.75 · |Q ∩ (T ∪ S)| / |Q|  +  0.25 · |Q ∩ T| / |Q|
    A question with no usable terms gets the neutral 0.5.

score_provider (an extra field of the item, beside the four scores)
    The provider's own score of the hit for the query that found it
    (`Hit.provider_score`: calibrated BM25 for the library, Tavily's score,
    ...), clamped to [0, 1]; absent when the provider gives none.

score_freshness
    From published_at's age (now − published_at, in days) and the intent's
    window (FreshnessWindow): 1.0 up to `full_days`, falling linearly to 0.0 at
    `zero_days`; with `since` set, 1.0 from that date on and 0.0 before it.
    No date: `undated` (0.5, neutral). A date in the future counts as new.
        academic  since 2020-01-01 (full), 0 before
        news      1.0 up to 365 days, linearly to 0 at 730 days
        web       1.0 up to 365 days (12 months), linearly to 0 at 730 (24 months)
        library   1.0 up to 3 years, linearly to 0 at 10 years (usually undated: 0.5)
    An unknown intent uses the web window.

score_authority
    By the URL: `file:` URLs (the user's own library) get `library_authority`
    (0.7). Otherwise the host (lower-case, "www." dropped) is looked up in
    `domains`, a host matching a listed domain or any subdomain of it
    (longest match wins): 0.9 for scholarly publishers and indexes (arxiv.org,
    doi.org, nature.com, science.org, acm.org, ieee.org, springer.com, …),
    0.85 for standards bodies and official documentation (python.org, w3.org,
    …), 0.8 for wikipedia.org and wire services, 0.3 for user-generated
    platforms. Unlisted hosts: 0.85 for government and academic names (a .gov,
    .edu, .mil or .int TLD; gov/edu/ac/mil as the second level of a country
    domain, e.g. .gov.uk, .ac.jp, .edu.cn), 0.2 for bare IP addresses, else
    `default_authority` (0.4).

score_final
    (w_r · relevance + w_f · freshness + w_a · authority) / (w_r + w_f + w_a),
    clamped to [0, 1], with the weights settings.weight_relevance /
    weight_freshness / weight_authority (default 0.6 / 0.2 / 0.2). All weights
    zero: score_final = relevance.

Every number above lives in `ScoringConfig`; SEARCHLAKE_SCORING_FILE (JSON) changes them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from types import MappingProxyType
from typing import Mapping

from schemas.timestamps import to_utc
from schemas.urls import domain_of, url_scheme
from tasks.common.settings import Settings
from tasks.retrieval.providers.base import Hit
from tasks.common.text import term_set


@dataclass(frozen=True)
class FreshnessWindow:
    """1.0 up to `full_days` old, linear down to 0.0 at `zero_days`; or, with
    `since`, 1.0 from that date on and 0.0 before it."""

    full_days: float = 365.0
    zero_days: float = 730.0
    since: date | None = None


_SCHOLARLY = 0.9
_OFFICIAL = 0.85
_REFERENCE = 0.8
_USER_GENERATED = 0.3

DEFAULT_DOMAINS: Mapping[str, float] = MappingProxyType({
    **dict.fromkeys([
        "arxiv.org", "doi.org", "nature.com", "science.org", "sciencemag.org", "acm.org", "ieee.org",
        "springer.com", "link.springer.com", "sciencedirect.com", "elsevier.com", "wiley.com",
        "tandfonline.com", "sagepub.com", "oup.com", "academic.oup.com", "cambridge.org", "plos.org",
        "pnas.org", "cell.com", "thelancet.com", "nejm.org", "bmj.com", "jamanetwork.com",
        "frontiersin.org", "mdpi.com", "biorxiv.org", "medrxiv.org", "ssrn.com", "jstor.org",
        "semanticscholar.org", "openalex.org", "openreview.net", "aclanthology.org", "usenix.org",
        "researchgate.net", "pubmed.ncbi.nlm.nih.gov", "cnki.net",
    ], _SCHOLARLY),
    **dict.fromkeys([
        "python.org", "docs.python.org", "w3.org", "ietf.org", "rfc-editor.org", "iso.org",
        "developer.mozilla.org", "who.int", "un.org", "oecd.org", "worldbank.org", "imf.org",
        "europa.eu",
    ], _OFFICIAL),
    **dict.fromkeys([
        "wikipedia.org", "britannica.com", "reuters.com", "apnews.com", "bbc.com", "bbc.co.uk",
        "xinhuanet.com", "news.cn",
    ], _REFERENCE),
    **dict.fromkeys([
        "medium.com", "reddit.com", "quora.com", "blogspot.com", "wordpress.com", "tumblr.com",
        "pinterest.com", "facebook.com", "x.com", "twitter.com", "tiktok.com", "zhihu.com",
        "baijiahao.baidu.com",
    ], _USER_GENERATED),
})

DEFAULT_WINDOWS: Mapping[str, FreshnessWindow] = MappingProxyType({
    "academic": FreshnessWindow(since=date(2020, 1, 1)),
    "news": FreshnessWindow(365.0, 730.0),
    "web": FreshnessWindow(365.0, 730.0),
    "library": FreshnessWindow(3 * 365.0, 10 * 365.0),
})


@dataclass(frozen=True)
class ScoringConfig:
    windows: Mapping[str, FreshnessWindow] = field(default_factory=lambda: DEFAULT_WINDOWS)
    undated: float = 0.5
    domains: Mapping[str, float] = field(default_factory=lambda: DEFAULT_DOMAINS)
    institutional_authority: float = _OFFICIAL
    ip_authority: float = 0.2
    library_authority: float = 0.7
    default_authority: float = 0.4


DEFAULT_CONFIG = ScoringConfig()


def clamp(value: float) -> float:
    return 0.0 if value != value else min(1.0, max(0.0, float(value)))  # NaN -> 0


# -- relevance ------------------------------------------------------------------

def lexical_relevance(query: str, title: str | None, snippet: str | None) -> float:
    wanted = term_set(query)
    if not wanted:
        return 0.5
    in_title = wanted & term_set(title)
    anywhere = in_title | (wanted & term_set(snippet))
    return clamp(0.75 * len(anywhere) / len(wanted) + 0.25 * len(in_title) / len(wanted))


def score_relevance(question: str, hit: Hit) -> float:
    if hit.question_score is not None:
        return clamp(hit.question_score)
    body = hit.snippet or (hit.content_text or "")[:1000]
    return lexical_relevance(question, hit.title, body)


# -- freshness ------------------------------------------------------------------

def score_freshness(published_at: datetime | None, intent: str, now: datetime,
                    config: ScoringConfig = DEFAULT_CONFIG) -> float:
    if published_at is None:
        return clamp(config.undated)
    window = config.windows.get(intent) or config.windows.get("web") or FreshnessWindow()
    published_at, now = to_utc(published_at), to_utc(now)
    if window.since is not None:
        return 1.0 if published_at.date() >= window.since else 0.0
    age_days = max(0.0, (now - published_at).total_seconds() / 86400)
    if age_days <= window.full_days:
        return 1.0
    if age_days >= window.zero_days:
        return 0.0
    return clamp(1.0 - (age_days - window.full_days) / (window.zero_days - window.full_days))




# -- authority ------------------------------------------------------------------

_INSTITUTIONAL_TLDS = frozenset({"gov", "edu", "mil", "int"})
_INSTITUTIONAL_SECOND_LEVEL = frozenset({"gov", "edu", "ac", "mil", "govt", "go"})


def score_authority(url: str, config: ScoringConfig = DEFAULT_CONFIG) -> float:
    if url_scheme(url) == "file":
        return clamp(config.library_authority)
    host = domain_of(url).rstrip(".")
    if not host:
        return clamp(config.default_authority)
    listed = _listed(host, config.domains)
    if listed is not None:
        return clamp(listed)
    if _is_ip(host):
        return clamp(config.ip_authority)
    if _institutional(host):
        return clamp(config.institutional_authority)
    return clamp(config.default_authority)


def _listed(host: str, domains: Mapping[str, float]) -> float | None:
    """The value of the longest listed domain that is the host or a parent."""
    labels = host.split(".")
    for start in range(len(labels)):
        value = domains.get(".".join(labels[start:]))
        if value is not None:
            return value
    return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def _institutional(host: str) -> bool:
    labels = host.split(".")
    if labels[-1] in _INSTITUTIONAL_TLDS:
        return True
    # country domains: gov.uk, ac.jp, edu.cn, go.jp
    return len(labels) >= 2 and len(labels[-1]) == 2 and labels[-2] in _INSTITUTIONAL_SECOND_LEVEL


# -- final ------------------------------------------------------------------------

def score_final(relevance: float, freshness: float, authority: float, settings: Settings) -> float:
    weights = (settings.weight_relevance, settings.weight_freshness, settings.weight_authority)
    total = sum(weights)
    if total <= 0:
        return clamp(relevance)
    return clamp((weights[0] * relevance + weights[1] * freshness + weights[2] * authority) / total)


def scoring_config(settings: Settings) -> ScoringConfig:
    """The defaults, changed by the scoring file (SEARCHLAKE_SCORING_FILE):
    listed domains are added to (or override) the built-in list."""
    changes = settings.scoring_overrides()
    if changes is None:
        return DEFAULT_CONFIG
    windows = {**DEFAULT_WINDOWS, **{intent: FreshnessWindow(w.full_days, w.zero_days, w.since)
                                     for intent, w in changes.windows.items()}}
    domains = {**DEFAULT_DOMAINS, **{host.lower(): score for host, score in changes.domains.items()}}
    return ScoringConfig(windows=MappingProxyType(windows), domains=MappingProxyType(domains),
                         **changes.changed_scores())


def score_hit(question: str, hit: Hit, intent: str, settings: Settings, now: datetime | None = None,
              config: ScoringConfig | None = None) -> dict[str, float]:
    """The four scores of one hit, keyed as SearchResultItem's fields, and
    score_provider when the provider scored the hit."""
    config = config or scoring_config(settings)
    now = now or datetime.now(timezone.utc)
    relevance = score_relevance(question, hit)
    freshness = score_freshness(hit.published_at, intent, now, config)
    authority = score_authority(hit.url, config)
    return {
        "score_relevance": round(relevance, 6),
        "score_freshness": round(freshness, 6),
        "score_authority": round(authority, 6),
        "score_final": round(score_final(relevance, freshness, authority, settings), 6),
        **({} if hit.provider_score is None else {"score_provider": round(clamp(hit.provider_score), 6)}),
    }
