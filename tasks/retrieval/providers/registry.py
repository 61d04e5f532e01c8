"""Provider names, which ones are configured, and construction by name.

Adding a provider: one module in this package and one line in `_CLASSES`.
"library" (the user's local documents) is always available and is built by
the caller, so it is passed in rather than constructed here.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

from tasks.common.settings import Settings
from tasks.retrieval.providers.arxiv import ArxivProvider
from tasks.retrieval.providers.base import Provider
from tasks.retrieval.providers.brave import BraveProvider
from tasks.retrieval.providers.api import ApiProvider
from tasks.retrieval.providers.openalex import OpenAlexProvider
from tasks.retrieval.providers.searxng import SearxngProvider
from tasks.retrieval.providers.semanticscholar import SemanticScholarProvider
from tasks.retrieval.providers.tavily import TavilyProvider
from tasks.retrieval.providers.thenewsapi import TheNewsApiProvider

PROVIDER_NAMES = ("library", "tavily", "brave", "searxng", "openalex", "semanticscholar", "arxiv", "thenewsapi")

_CLASSES: dict[str, type[ApiProvider]] = {
    cls.name: cls
    for cls in (
        TavilyProvider,
        BraveProvider,
        SearxngProvider,
        OpenAlexProvider,
        SemanticScholarProvider,
        ArxivProvider,
        TheNewsApiProvider,
    )
}


def configured_names(settings: Settings) -> list[str]:
    """Providers to use when none are named: the library, plus every API whose
    key or URL is set. arXiv needs no key, so it runs only when named (its
    terms ask for one request per 3 s, too slow to add silently)."""
    names = ["library"]
    for name in PROVIDER_NAMES[1:]:
        setting = _CLASSES[name].key_setting
        if setting and getattr(settings, setting):
            names.append(name)
    return names


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


def provider_class(name: str) -> type:
    """The class behind a name, for its `intents` and `endpoint` (routing
    needs them before any instance exists)."""
    name = _one_name(name)
    if name == "library":
        # Imported here: the library provider pulls in the catalog and DuckDB.
        from tasks.retrieval.providers.library.provider import LibraryProvider

        return LibraryProvider
    return _CLASSES[name]


def build_provider(name: str, settings: Settings, client: httpx.Client, library: Provider | None = None) -> Provider:
    """An instance ready to search. An unconfigured API is still built: its
    search raises RemoteError("not_configured"), which lands like any failure."""
    name = _one_name(name)
    if name == "library":
        if library is None:
            raise ValueError("the 'library' provider must be passed in as `library`")
        return library
    return _CLASSES[name](settings, client)


def _one_name(name: str) -> str:
    cleaned = validate_names([name])
    if not cleaned:
        raise ValueError(f"empty provider name (known: {', '.join(PROVIDER_NAMES)})")
    return cleaned[0]
