"""What a research run is checked for before it starts, wherever it is
started from (the command line, the web page, a deployment, a batch): what
only this machine can judge — the library folder, the providers and what
they need, the budget against the PIPELINE_* variables (the request's own
values are validated by schemas/request.py). Each problem is one line."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from schemas.request import BudgetRequest, ResearchRequest
from schemas.errors import UserError


class ResearchRefused(UserError, ValueError):
    """The run cannot start as asked; the message says why, in one line."""


def check_library(library: Path | None) -> Path | None:
    if library is not None and not library.is_dir():
        raise ResearchRefused(f"library folder {str(library)!r} does not exist or is not a folder")
    return library


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


BUDGET_OPTIONS = {"timeout_seconds": "--timeout", "max_target_count": "--max-target-count",
                  "max_fallback_rounds": "--max-fallback-rounds"}


def resolve_budget(budget: BudgetRequest, option_names: Mapping[str, str] = BUDGET_OPTIONS):
    """The budget asked for over the PIPELINE_* variables over the defaults;
    a bad value is named as `option_names` says the user gave it."""
    from schemas.governance import BudgetError
    from tasks.common.settings import Settings
    try:
        return Settings().budget(budget.overrides(), option_names=option_names)
    except BudgetError as exc:
        raise ResearchRefused(str(exc)) from None


def check_request(request: ResearchRequest, option_names: Mapping[str, str] = BUDGET_OPTIONS) -> ResearchRequest:
    """The request as it will run — its library folder resolved, its provider
    names checked, every budget field resolved — or ResearchRefused (a budget
    field named by `option_names`: the CLI's options by default)."""
    library = check_library(Path(request.library).expanduser() if request.library else None)
    names = parse_providers(request.providers)
    budget = resolve_budget(request.budget, option_names)
    check_prerequisites(library, names, request.max_results)
    return request.model_copy(update={"library": str(library.resolve()) if library else None, "providers": names,
                                      "budget": BudgetRequest(**budget.to_dict())})


def check_prerequisites(library: Path | None, names: list[str] | None, max_results: int | None) -> None:
    """Keys, URLs and folders the chosen providers need (pre-flight)."""
    from tasks.common.settings import research_settings
    from tasks.selection.preflight import PreflightError, preflight
    from tasks.retrieval.providers.registry import enabled_names
    config = research_settings(str(library) if library else None, names, max_results)
    try:
        preflight(config, enabled_names(config))
    except PreflightError as exc:
        raise ResearchRefused(str(exc)) from None
