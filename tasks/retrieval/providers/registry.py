"""Provider names, which ones are configured, and construction by name.

Adding a provider: one module in this package (its class, and its own
settings beside it) and one line in `PROVIDERS`. "library" (the user's local
documents, or Python's docs) is always available.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx
from pydantic_settings import BaseSettings

from tasks.common.settings import Settings
from tasks.retrieval.providers.arxiv import ArxivProvider
from tasks.retrieval.providers.base import Provider
from tasks.retrieval.providers.brave import BraveProvider
from tasks.retrieval.providers.library.provider import LibraryProvider
from tasks.retrieval.providers.openalex import OpenAlexProvider
from tasks.retrieval.providers.searxng import SearxngProvider
from tasks.retrieval.providers.semanticscholar import SemanticScholarProvider
from tasks.retrieval.providers.tavily import TavilyProvider
from tasks.retrieval.providers.thenewsapi import TheNewsApiProvider

# The providers, in the order runs use and pages list them.
PROVIDERS: tuple[type[Provider], ...] = (
    LibraryProvider,
    TavilyProvider,
    BraveProvider,
    SearxngProvider,
    OpenAlexProvider,
    SemanticScholarProvider,
    ArxivProvider,
    TheNewsApiProvider,
)
PROVIDER_NAMES = tuple(cls.name for cls in PROVIDERS)
_CLASSES: dict[str, type[Provider]] = {cls.name: cls for cls in PROVIDERS}


def configured_names(settings: Settings) -> list[str]:
    """Providers to use when none are named: the library, plus every API whose
    key or URL is set. arXiv needs no key, so it runs only when named (its
    terms ask for one request per 3 s, too slow to add silently)."""
    return [cls.name for cls in PROVIDERS if cls.configured(settings)]


def documented_settings() -> list[type[BaseSettings]]:
    """Every settings class a user may set: searchlake's own, then each
    provider's (the documentation lists each one's variables)."""
    return [Settings, *(cls.settings_class for cls in PROVIDERS if cls.settings_class is not None)]


def provider_settings_classes() -> list[type[BaseSettings]]:
    """The providers' own settings classes."""
    return documented_settings()[1:]


def validate_names(names: Iterable[str]) -> list[str]:
    """Cleaned, de-duplicated names in the given order; ValueError on an unknown one."""
    cleaned: list[str] = []
    for raw in names:
        name = raw.strip().lower()
        if not name:
            continue
        if name not in PROVIDER_NAMES:
            raise ValueError(f"unknown provider '{raw.strip()}' (known: {', '.join(PROVIDER_NAMES)})")
        if name not in cleaned:
            cleaned.append(name)
    return cleaned


def enabled_names(settings: Settings) -> list[str]:
    """The providers a run uses: those named in settings.providers (comma
    list, validated), else every configured one."""
    if settings.providers and settings.providers.strip():
        return validate_names(settings.providers.split(","))
    return configured_names(settings)


def provider_class(name: str) -> type[Provider]:
    """The class behind a name, for what it declares (routing, concurrency and
    pre-flight need it before any instance exists)."""
    return _CLASSES[_one_name(name)]


def build_provider(name: str, settings: Settings, client: httpx.Client | None = None) -> Provider:
    """An instance ready to search. An unconfigured API is still built: its
    search raises RemoteError("not_configured"), which lands like any failure."""
    return _CLASSES[_one_name(name)](settings, client)


def _one_name(name: str) -> str:
    cleaned = validate_names([name])
    if not cleaned:
        raise ValueError(f"empty provider name (known: {', '.join(PROVIDER_NAMES)})")
    return cleaned[0]
