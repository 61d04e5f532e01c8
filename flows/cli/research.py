"""The research-side commands: research, policy, report, ask, serve."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from flows.cli.common import (TaskIdOpt, UserError, app, check_output_file, err, out, print_top, require_bundles,
                              settings, write_output)


@app.command()
def research(
    question: Annotated[str, typer.Argument(help="The research question")],
    task_id: TaskIdOpt = None,
    library: Annotated[Optional[Path], typer.Option(help="Folder of your documents (default: Python's docs)")] = None,
    providers: Annotated[Optional[str], typer.Option(help="Comma list, e.g. library,tavily,arxiv")] = None,
    max_results: Annotated[Optional[int], typer.Option(min=1, max=50, help="Results per provider per query")] = None,
    target: Annotated[Optional[int], typer.Option(help="Sources to select (default PIPELINE_TARGET_COUNT or 10)")] = None,
    demand_id: Annotated[str, typer.Option(help="Policy row to apply (see `searchlake policy`)")] = "default",
    timeout: Annotated[Optional[int], typer.Option(help="Run timeout in seconds, >= 30 (PIPELINE_TIMEOUT)")] = None,
    max_target_count: Annotated[Optional[int], typer.Option(help="Cap on --target, 1-200 (PIPELINE_MAX_TARGET_COUNT)")] = None,
    max_fallback_rounds: Annotated[Optional[int], typer.Option(help="0-5 (PIPELINE_MAX_FALLBACK_ROUNDS)")] = None,
) -> None:
    """A governed research run: plan, search in parallel, land, consolidate,
    filter, report. Exit status 0 when the run completes, 1 when it fails."""
    # The terminal shows progress and the run summary; Prefect's own log
    # lines (a failed run's traceback among them) only when asked for.
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
    if not question.strip():
        raise UserError("the question is empty")
    if library is not None and not library.is_dir():
        raise UserError(f"library folder {str(library)!r} does not exist or is not a folder")
    if target is not None and target < 1:
        raise UserError(f"--target must be at least 1, not {target}")
    settings()  # a usable home, before a run starts
    names = parse_providers(providers)
    budget = resolve_budget(timeout, max_target_count, max_fallback_rounds)
    check_prerequisites(library, names, max_results)
    from flows import observer
    from flows.cli.console import TerminalObserver
    from flows.research import research_flow
    run = research_flow.with_options(timeout_seconds=budget.timeout_seconds)
    with TerminalObserver(err) as watch:
        token = observer.current.set(watch)
        try:
            state = run(question, task_id=task_id, library=str(library) if library else None, providers=names,
                        max_results=max_results, target=target, demand_id=demand_id,
                        budget=budget.to_dict(), return_state=True)
        finally:
            observer.current.reset(token)
    raise typer.Exit(print_run_outcome(state))


def resolve_budget(timeout, max_target_count, max_fallback_rounds):
    from schemas.governance import BudgetError
    from tasks.common.settings import Settings
    try:
        return Settings().budget({"timeout_seconds": timeout, "max_target_count": max_target_count,
                                  "max_fallback_rounds": max_fallback_rounds},
                                 option_names={"timeout_seconds": "--timeout", "max_target_count": "--max-target-count",
                                               "max_fallback_rounds": "--max-fallback-rounds"})
    except BudgetError as exc:
        raise UserError(str(exc)) from None


def check_prerequisites(library: Path | None, names: list[str] | None, max_results: int | None) -> None:
    from tasks.common.settings import research_settings
    from tasks.governance.preflight import PreflightError, preflight
    from tasks.retrieval.providers.registry import enabled_names
    config = research_settings(str(library) if library else None, names, max_results)
    try:
        preflight(config, enabled_names(config))
    except PreflightError as exc:
        raise UserError(str(exc)) from None


def parse_providers(text: str | None) -> list[str] | None:
    if text is None:
        return None
    from tasks.retrieval.providers.registry import validate_names
    try:
        names = validate_names([n.strip() for n in text.split(",") if n.strip()])
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not names:
        raise UserError("--providers names no provider")
    return names


def print_run_outcome(state) -> int:
    """The run summary, the top sources and where everything is; the exit status."""
    from tasks.governance.runs import RunSummary
    config = settings()
    summary = RunSummary.load(config, str(state.state_details.flow_run_id))
    if summary is None:
        err.print(f"error: the run did not start: {state.message}", markup=False, highlight=False)
        return 1
    out.print("\n".join(summary.lines()), markup=False, highlight=False)
    if state.is_completed():
        print_top(summary.task_id, 10)
    out.print(f"lake: {config.lake_root}   catalog: {config.catalog_path}")
    if summary.outputs.get("report"):
        out.print(f"report: {summary.outputs['report']}")
    out.print(f"query it: searchlake sql \"select * from consolidated where task_id = '{summary.task_id}'\"")
    return summary.exit_code


@app.command()
def policy(
    demand_id: Annotated[Optional[str], typer.Option(help="The demand whose policy to show or set")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="key=value, repeatable (needs --demand-id)")] = None,
) -> None:
    """Show the search policies, or set fields of one demand's policy."""
    from schemas.governance import PolicyError
    from tasks.lake.catalog import open_catalog
    from tasks.governance.policy import list_policies, parse_assignments, set_policy
    try:
        with open_catalog(settings(), "policy") as catalog:
            if set_:
                if not demand_id:
                    raise UserError("--set needs --demand-id (use 'default' for the default row)")
                set_policy(catalog, demand_id, **parse_assignments(set_))
            rows = [r for r in list_policies(catalog) if demand_id in (None, r.demand_id)]
    except (PolicyError, ValueError) as exc:
        raise UserError(str(exc)) from None
    table = Table(title="search policies")
    for column in ("demand_id", "policy", "updated_at"):
        table.add_column(column, overflow="fold")
    for row in rows:
        text = row.error or ", ".join(f"{k}={v}" for k, v in row.policy.to_dict().items())
        table.add_row(row.demand_id, text, str(row.updated_at))
    out.print(table)


class ReportFormat(str, Enum):
    md = "md"
    html = "html"
    json = "json"


@app.command()
def report(
    task_id: TaskIdOpt = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="md, html or json")] = ReportFormat.md,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of printing")] = None,
    rebuild: Annotated[bool, typer.Option(help="Synthesize the report again from the lake first")] = False,
) -> None:
    """Print (or write) a task's report from the lake."""
    if not task_id:
        raise UserError("name a task with --task-id T")
    from tasks.lake.catalog import open_catalog
    from tasks.common.llm import LLMConfig
    from tasks.reporting.report import load_report, publish_report
    from tasks.retrieval.plan_store import selected_source_ids, stored_plan
    if output is not None:
        check_output_file(output)
    config = settings()
    if rebuild:
        with open_catalog(config, "report: plan", read_only=True) as catalog:
            require_bundles(catalog, task_id)
            plan, source_ids = stored_plan(catalog, task_id), selected_source_ids(catalog, task_id)
        publish_report(config, task_id, plan, llm=LLMConfig.from_settings(config), source_ids=source_ids)
    with open_catalog(config, "report", read_only=True) as catalog:
        text = load_report(catalog, task_id, fmt.value)
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        write_output(output, text)
        err.print(f"wrote {output}")


class ContextSize(str, Enum):
    low = "low"
    medium = "medium"
    high = "high"


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question")],
    task_id: TaskIdOpt = None,
    max_results: Annotated[Optional[int], typer.Option(help="Web results the model may use, 0-10 (default 5)")] = None,
    context: Annotated[Optional[ContextSize], typer.Option("--context", help="Search context size (default high)")] = None,
    model: Annotated[Optional[str], typer.Option(help="OpenRouter model (default SEARCHLAKE_ASK_MODEL)")] = None,
    max_cost: Annotated[Optional[float], typer.Option(help="Refuse an answer that cost more USD than this")] = None,
) -> None:
    """Single-shot search + summary: one OpenRouter request with web search."""
    if not question.strip():
        raise UserError("the question is empty")
    if max_results is not None and not 0 <= max_results <= 10:
        raise UserError(f"--max-results must be between 0 and 10, not {max_results}")
    from schemas.ask import AskOptions
    from tasks.ask.single_shot import AskError, ask as run_ask
    config = settings()
    if config.openrouter_api_key is None:
        raise UserError("ask needs OPENROUTER_API_KEY (and optionally OPENROUTER_BASE_URL)")
    options = AskOptions(max_results=max_results, search_context_size=context.value if context else None,
                         model=model, max_cost=max_cost, task_id=task_id)
    try:
        result = run_ask(config, question, options)
    except AskError as exc:
        raise UserError(str(exc)) from None
    out.print(result.answer, markup=False, highlight=False)
    out.print()
    if result.no_citations:
        out.print("[yellow]no citations[/yellow]: the answer is kept and queued for review")
    for number, citation in enumerate(result.citations, start=1):
        out.print(f"[{number}] {citation.domain} — {citation.title} {citation.url}", markup=False, highlight=False)
    err.print(result.line(), markup=False, highlight=False)


@app.command()
def serve(
    host: Annotated[Optional[str], typer.Option(help="Address to bind (default 127.0.0.1)")] = None,
    port: Annotated[Optional[int], typer.Option(help="Port (default 8765)")] = None,
) -> None:
    """Stream research progress events as Server-Sent Events."""
    from tasks.progress.serve import serve as run_server
    config = settings()
    err.print(f"serving progress events on http://{host or config.serve_host}:{port or config.serve_port}/runs")
    run_server(config, host, port)
