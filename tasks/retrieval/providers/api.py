"""What the API providers share: the call wrapper and the small parsers that
turn loosely typed JSON fields into `Hit` fields.

Parsers are forgiving on purpose: APIs add, drop and retype fields over time
(each provider's API documentation), so a missing or odd field becomes None, never an
exception. Only a body whose overall shape is wrong is a `bad_response`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import httpx

from tasks.common.settings import Settings
from tasks.common.http import request, request_json
from tasks.retrieval.providers.base import Hit, Prepared, ProviderSettings
from schemas.errors import RemoteError


class ApiProvider:
    """Base for providers that call a remote API with the shared client.

    Subclasses set `name`, `intents`, `endpoint`, `settings_class` (their
    own ProviderSettings, holding the credential or URL; None when none is
    needed) and `key_required`, and implement `search`.
    """

    name: ClassVar[str]
    intents: ClassVar[frozenset[str]]
    endpoint: ClassVar[str]
    settings_class: ClassVar[type[ProviderSettings] | None] = None
    key_required: ClassVar[bool] = True
    reads_intent: ClassVar[bool] = False
    max_concurrency: ClassVar[int] = 64
    min_interval_seconds: ClassVar[float] = 0.0
    prepares: ClassVar[str | None] = None
    finds_web_pages: ClassVar[bool] = True
    answers_in_full: ClassVar[bool] = False

    def __init__(self, settings: Settings, client: httpx.Client):
        self.settings = settings
        self.client = client
        self.config = settings.section(self.settings_class) if self.settings_class else None

    @classmethod
    def configured(cls, settings: Settings) -> bool:
        return cls.settings_class is not None and bool(settings.section(cls.settings_class).credential)

    @classmethod
    def preflight(cls, settings: Settings) -> list[str]:
        if cls.key_required and cls.settings_class and not cls.configured(settings):
            return [f"{cls.name} needs {cls.settings_class.variable}"]
        return []

    def prepare(self) -> Prepared:
        return Prepared()

    @property
    def key(self) -> str | None:
        return self.config.credential if self.config else None

    def require_key(self) -> str | None:
        """The credential, or not_configured when the API cannot work without it."""
        key = self.key
        if self.key_required and self.settings_class and not key:
            raise RemoteError(
                "not_configured", f"{self.name}: set {self.settings_class.variable} to use this provider"
            )
        return key

    def get_json(self, url: str, **kwargs) -> Any:
        return request_json(self.client, "GET", url, **self._call_options(kwargs))

    def post_json(self, url: str, **kwargs) -> Any:
        return request_json(self.client, "POST", url, **self._call_options(kwargs))

    def get(self, url: str, **kwargs) -> httpx.Response:
        return request(self.client, "GET", url, **self._call_options(kwargs))

    def _call_options(self, kwargs: dict) -> dict:
        # Every call retries per settings and scrubs every configured secret.
        kwargs.setdefault("retries", self.settings.http_retries)
        kwargs.setdefault("secrets", self.settings.secret_values())
        return kwargs

    def bad_response(self, what: str) -> RemoteError:
        return RemoteError("bad_response", f"{self.name}: {what}")


# -- shape checks -------------------------------------------------------------
def dict_items(provider: ApiProvider, payload: Mapping, key: str, *, missing_ok: bool = False) -> list[dict]:
    """payload[key] as a list of dicts (non-dict entries dropped). A missing
    list is an empty page only where the API documents omitting it."""
    value = payload.get(key)
    if value is None:
        if missing_ok:
            return []
        raise provider.bad_response(f"response has no '{key}' list")
    if not isinstance(value, list):
        raise provider.bad_response(f"'{key}' is {type(value).__name__}, not a list")
    return [item for item in value if isinstance(item, dict)]


def as_list(value: Any) -> list:
    """value if it is a list, else []: for optional list fields."""
    return value if isinstance(value, list) else []


def dig(obj: Any, *path: str) -> Any:
    """obj[a][b]... or None when any step is missing or not a dict."""
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


# -- field parsers ------------------------------------------------------------
def text_or_none(value: Any) -> str | None:
    """A stripped, whitespace-collapsed string, or None for empty/non-strings."""
    if not isinstance(value, str):
        return None
    collapsed = " ".join(value.split())
    return collapsed or None


_TAG_RE = re.compile(r"<[^>]*>")


def strip_markup(value: Any) -> str | None:
    """Snippets with highlighting (`<strong>`) and entities (`&#x27;`) as plain text."""
    if not isinstance(value, str):
        return None
    return text_or_none(html.unescape(_TAG_RE.sub("", value)))


def http_url(value: Any) -> str | None:
    """Only absolute http(s) URLs become a Hit's url."""
    value = text_or_none(value)
    if value and value.lower().startswith(("http://", "https://")):
        return value
    return None


def first_url(*candidates: Any) -> str | None:
    """The first candidate that is a usable http(s) URL."""
    return next((url for url in map(http_url, candidates) if url), None)


_YEAR_RE = re.compile(r"^\d{4}$")


def parse_datetime(value: Any) -> datetime | None:
    """An aware datetime from the date formats these APIs use: ISO 8601
    (with or without zone, date only), RFC 2822 (Tavily news) or a bare year.
    Naive values are taken as UTC, which is what the APIs document."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _from_year(value)
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    parsed: datetime | None = None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        if _YEAR_RE.match(value):
            return _from_year(int(value))
        try:
            parsed = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _from_year(year: int) -> datetime | None:
    return datetime(year, 1, 1, tzinfo=timezone.utc) if 1000 <= year <= 9999 else None


def number(value: Any) -> int | float | None:
    """A JSON number as is (counts stay ints); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def unit_score(value: Any) -> float | None:
    """A score the API already gives in [0, 1], clamped against drift."""
    score = number(value)
    return None if score is None else min(1.0, max(0.0, float(score)))


def scale_by_max(values: Sequence[Any]) -> list[float | None]:
    """Scores on an open scale (SearXNG, OpenAlex) divided by the page's best,
    so the top hit is 1.0. Only meaningful within one response."""
    numbers = [number(v) for v in values]
    best = max((n for n in numbers if n is not None and n > 0), default=None)
    if best is None:
        return [None] * len(numbers)
    return [None if n is None else max(0.0, n) / best for n in numbers]


def author_names(authors: Iterable[Any], limit: int = 10) -> list[str]:
    """Display names from author lists shaped {"name"} or {"author": {"display_name"}}."""
    names = []
    for author in as_list(authors):
        name = text_or_none(dig(author, "name")) or text_or_none(dig(author, "author", "display_name"))
        if name:
            names.append(name)
        if len(names) >= limit:
            break
    return names


def compact(mapping: Mapping[str, Any]) -> dict:
    """Drop None/empty values so `Hit.extra` holds only what the API said."""
    return {k: v for k, v in mapping.items() if v not in (None, "", [], {})}


def make_hit(*, url: Any, title: Any, **fields) -> Hit | None:
    """A Hit, or None when the result lacks a usable URL or title."""
    url, title = http_url(url), text_or_none(title)
    if not url or not title:
        return None
    fields["extra"] = compact(fields.get("extra") or {})
    return Hit(url=url, title=title, **fields)


def per_call(max_results: int, cap: int) -> int:
    """The count parameter to send: within the API's documented 1..cap."""
    return max(1, min(max_results, cap))


def keep(hits: Iterable[Hit | None], max_results: int) -> list[Hit]:
    return [hit for hit in hits if hit is not None][: max(0, max_results)]
