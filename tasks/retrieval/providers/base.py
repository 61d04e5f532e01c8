"""The one interface every search provider implements.

A provider turns a `Query` into a list of `Hit`s (raw results, unscored), or
raises `RemoteError` (tasks/common/errors.py) with a short machine-readable code. Scoring, bundling
and landing happen elsewhere, the same for every provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Protocol

from tasks.common.settings import SettingsSection

INTENTS = ("academic", "news", "web", "library")


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    intent: str
    question: str = ""  # the task's research question, for providers that can judge relevance to it


@dataclass(frozen=True)
class Hit:
    url: str
    title: str
    snippet: str | None = None
    content_text: str | None = None
    published_at: datetime | None = None
    language: str | None = None
    # the provider's own relevance in [0, 1] when it has one (BM25, Tavily score, ...)
    provider_score: float | None = None
    # the provider's relevance of this hit to the task's question (Query.question), in [0, 1], when it can judge it
    question_score: float | None = None
    http_status: int | None = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Prepared:
    """What a provider did before a run's searches: one line for the run's
    trace, and the files it could not read (path, reason) for the error log."""

    summary: str = ""
    skipped: list[tuple[str, str]] = field(default_factory=list)


class ProviderSettings(SettingsSection):
    """A provider's own settings, declared beside its code: the key or URL
    it is called with, read under its usual environment variable."""

    variable: ClassVar[str]  # the environment variable that sets the credential, as messages name it

    @property
    def credential(self) -> str | None:
        """The key or URL, when set."""
        raise NotImplementedError


class Provider(Protocol):
    """Everything the flow reads about a provider is declared here."""

    name: ClassVar[str]
    intents: ClassVar[frozenset[str]]  # the intents it answers well
    endpoint: ClassVar[str]  # shown as the URL of a failed call's item
    settings_class: ClassVar[type[ProviderSettings] | None]  # its own settings (key or URL), if any
    key_required: ClassVar[bool]  # whether a run must refuse to start without its key or URL
    reads_intent: ClassVar[bool]  # whether the intent changes its answer (else one search per text)
    max_concurrency: ClassVar[int]  # calls in flight at once, at most
    min_interval_seconds: ClassVar[float]  # pause after each call, holding its slot (a provider's terms)
    prepares: ClassVar[str | None]  # what `prepare` does, as a progress label; None: nothing to do
    finds_web_pages: ClassVar[bool]  # its results are web pages the quality filter may fetch
    # more results cost it nothing (no network, no quota): a run's first round asks it for as many as the
    # run needs, instead of a second, deeper round
    answers_in_full: ClassVar[bool]

    def __init__(self, settings, client) -> None: ...

    @classmethod
    def configured(cls, settings) -> bool: ...  # used when no provider is named: its key or URL is set

    @classmethod
    def preflight(cls, settings) -> list[str]: ...  # what a run would miss (its key, ...), said before it starts

    def prepare(self) -> Prepared: ...

    def search(self, query: Query, max_results: int) -> list[Hit]: ...
