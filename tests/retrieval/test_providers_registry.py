"""Provider names, defaults from configured keys, and construction by name."""

from __future__ import annotations

import httpx
import pytest

from tasks.common.settings import Settings
from tests.research_helpers import settings_with
from tasks.common.http import make_client
from tasks.retrieval.providers import registry
from tasks.retrieval.providers.base import Query
from schemas.errors import RemoteError
from tasks.retrieval.providers.searxng import SearxngProvider
from tasks.retrieval.providers.tavily import TavilyProvider

NO_KEYS = dict(
    tavily_api_key=None, brave_api_key=None, searxng_url=None, openalex_api_key=None,
    semantic_scholar_api_key=None, thenewsapi_token=None,
)


def settings(**overrides) -> Settings:
    return settings_with(**{**NO_KEYS, **overrides})


@pytest.fixture
def client():
    # Any request reaching this transport is a bug in these tests.
    def refuse(request):
        raise AssertionError(f"unexpected request to {request.url}")

    with make_client(settings(), transport=httpx.MockTransport(refuse)) as c:
        yield c


def test_names_and_classes_agree():
    assert registry.PROVIDER_NAMES == (
        "library", "tavily", "brave", "searxng", "openalex", "semanticscholar", "arxiv", "thenewsapi",
    )
    assert set(registry._CLASSES) == set(registry.PROVIDER_NAMES)
    assert all(cls.name == name for name, cls in registry._CLASSES.items())


def test_only_library_without_keys():
    assert registry.configured_names(settings()) == ["library"]


def test_configured_by_keys_and_url_in_registry_order():
    s = settings(
        thenewsapi_token="t", searxng_url="http://searx.lan:8080", tavily_api_key="k",
        semantic_scholar_api_key="s2", openalex_api_key="oa", brave_api_key="b",
    )
    assert registry.configured_names(s) == [
        "library", "tavily", "brave", "searxng", "openalex", "semanticscholar", "thenewsapi",
    ]  # arxiv needs no key and still only runs when named


def test_validate_names_cleans_and_dedupes():
    assert registry.validate_names([" Tavily", "arxiv", "tavily", "", "library"]) == ["tavily", "arxiv", "library"]


def test_validate_names_rejects_unknown():
    with pytest.raises(ValueError, match=r"unknown provider 'bing' \(known: library, tavily, .*thenewsapi\)"):
        registry.validate_names(["tavily", "bing"])


def test_build_provider_returns_instances(client):
    s = settings(tavily_api_key="k", searxng_url="http://searx.lan:8080/")
    tavily = registry.build_provider("tavily", s, client)
    assert isinstance(tavily, TavilyProvider) and tavily.client is client
    searx = registry.build_provider("searxng", s, client)
    assert isinstance(searx, SearxngProvider) and searx.endpoint == "http://searx.lan:8080/search"
    for name in registry.PROVIDER_NAMES[1:]:
        assert registry.build_provider(name, s, client).name == name


def test_every_provider_declares_what_the_flow_reads():
    for name in registry.PROVIDER_NAMES:
        cls = registry.provider_class(name)
        assert cls.intents and cls.endpoint and cls.max_concurrency >= 1 and cls.min_interval_seconds >= 0
        assert isinstance(cls.reads_intent, bool) and isinstance(cls.key_required, bool)
        assert cls.settings_class is None or cls.settings_class in registry.documented_settings()
        assert isinstance(cls.finds_web_pages, bool) and (cls.prepares is None or isinstance(cls.prepares, str))
    assert registry.provider_class("arxiv").min_interval_seconds == 3.0
    assert [n for n in registry.PROVIDER_NAMES if registry.provider_class(n).prepares] == ["library"]


def test_an_api_provider_has_nothing_to_prepare(client, tmp_path):
    prepared = registry.build_provider("tavily", settings(home=tmp_path), client).prepare()
    assert prepared.summary == "" and prepared.skipped == []


def test_build_library_like_any_provider(client, tmp_path):
    provider = registry.build_provider("library", settings(home=tmp_path), client)
    assert provider.name == "library" and provider.corpus.key.startswith("pydoc:")


def test_build_unknown_or_empty_raises(client):
    with pytest.raises(ValueError, match="unknown provider"):
        registry.build_provider("google", settings(), client)
    with pytest.raises(ValueError):
        registry.build_provider(" ", settings(), client)


def test_unconfigured_provider_fails_at_search_time(client):
    provider = registry.build_provider("brave", settings(), client)
    with pytest.raises(RemoteError) as err:
        provider.search(Query("q1", "x", "web"), 5)
    assert err.value.code == "not_configured"


def test_enabled_names_prefers_the_named_list():
    s = settings(tavily_api_key="k", providers=" arxiv, Tavily ,arxiv")
    assert registry.enabled_names(s) == ["arxiv", "tavily"]
    assert registry.enabled_names(settings(tavily_api_key="k")) == ["library", "tavily"]
    with pytest.raises(ValueError, match="unknown provider 'bing'"):
        registry.enabled_names(settings(providers="bing"))


def test_provider_class_for_routing():
    assert registry.provider_class("tavily") is TavilyProvider
    assert "academic" in registry.provider_class("openalex").intents
    assert registry.provider_class("library").name == "library"


def test_checking_which_providers_a_run_uses_does_not_load_the_library_index():
    """A command checks its request before handing the run to a server: the
    library's index, its ranking and numpy load when the library is searched."""
    import subprocess
    import sys
    heavy = ("numpy", "pyarrow", "bm25s", "tasks.retrieval.providers.library.index",
             "tasks.retrieval.providers.library.ranking")
    code = ("import sys\nfrom tasks.common.settings import Settings\n"
            "from tasks.retrieval.providers.registry import enabled_names, provider_class\n"
            "for name in enabled_names(Settings()):\n    provider_class(name).preflight(Settings())\n"
            f"print([m for m in {heavy!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
