"""Pre-flight: before any work, check that what a run will use is there —
provider keys and URLs, the LLM settings, the library folder — and name
everything missing in one line."""

from __future__ import annotations

from tasks.common.settings import Settings
from tasks.retrieval.providers.registry import provider_class
from schemas.errors import UserError


class PreflightError(UserError, ValueError):
    """Something a run needs is missing; the message names all of it."""


def preflight(settings: Settings, provider_names: list[str]) -> None:
    problems = [p for name in provider_names for p in _provider_problems(name, settings)]
    problems += _llm_problems(settings)
    try:
        settings.scoring_overrides()
    except ValueError as exc:
        problems.append(str(exc))
    if problems:
        raise PreflightError("cannot start: " + "; ".join(problems))


def _provider_problems(name: str, settings: Settings) -> list[str]:
    return provider_class(name).preflight(settings)


def _llm_problems(settings: Settings) -> list[str]:
    given = {"SEARCHLAKE_LLM_BASE_URL": settings.llm_base_url, "SEARCHLAKE_LLM_MODEL": settings.llm_model}
    if any(given.values()) and not all(given.values()):
        missing = [name for name, value in given.items() if not value]
        return [f"the LLM is half configured: set {' and '.join(missing)}"]
    return []
