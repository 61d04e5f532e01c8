"""What a research run is checked for before it starts, wherever it is
started from (the command line, the web page): the question, the providers
and what they need, the library folder, the budget. Each problem is one line."""

from __future__ import annotations

from pathlib import Path

from tasks.common.errors import UserError


class ResearchRefused(UserError, ValueError):
    """The run cannot start as asked; the message says why, in one line."""


def check_question(question: str) -> str:
    if not question.strip():
        raise ResearchRefused("the question is empty")
    return question


def check_library(library: Path | None) -> Path | None:
    if library is not None and not library.is_dir():
        raise ResearchRefused(f"library folder {str(library)!r} does not exist or is not a folder")
    return library


def check_target(target: int | None) -> int | None:
    if target is not None and target < 1:
        raise ResearchRefused(f"--target must be at least 1, not {target}")
    return target


def parse_providers(names: list[str] | None) -> list[str] | None:
    if names is None:
        return None
    from tasks.retrieval.providers.registry import validate_names
    try:
        chosen = validate_names([n.strip() for n in names if n.strip()])
    except ValueError as exc:
        raise ResearchRefused(str(exc)) from None
    if not chosen:
        raise ResearchRefused("--providers names no provider")
    return chosen


def resolve_budget(timeout: int | None = None, max_target_count: int | None = None,
                   max_fallback_rounds: int | None = None):
    from schemas.governance import BudgetError
    from tasks.common.settings import Settings
    try:
        return Settings().budget({"timeout_seconds": timeout, "max_target_count": max_target_count,
                                  "max_fallback_rounds": max_fallback_rounds},
                                 option_names={"timeout_seconds": "--timeout", "max_target_count": "--max-target-count",
                                               "max_fallback_rounds": "--max-fallback-rounds"})
    except BudgetError as exc:
        raise ResearchRefused(str(exc)) from None


def check_prerequisites(library: Path | None, names: list[str] | None, max_results: int | None) -> None:
    """Keys, URLs and folders the chosen providers need (pre-flight)."""
    from tasks.common.settings import research_settings
    from tasks.governance.preflight import PreflightError, preflight
    from tasks.retrieval.providers.registry import enabled_names
    config = research_settings(str(library) if library else None, names, max_results)
    try:
        preflight(config, enabled_names(config))
    except PreflightError as exc:
        raise ResearchRefused(str(exc)) from None
