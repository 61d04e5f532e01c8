"""The research-side commands: research, policy, report, ask, serve."""

from __future__ import annotations

import os
import signal
import sys
import threading
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from flows.cli.common import (LatestTaskOpt, TaskIdOpt, UserError, app, check_output_file, err, out, print_top,
                              require_bundles, settings, task_or_latest, write_output)
from tasks.records.summary import RunSummary


@app.command()
def research(
    question: Annotated[Optional[str], typer.Argument(help="The research question (or --questions FILE)")] = None,
    task_id: TaskIdOpt = None,
    library: Annotated[Optional[Path], typer.Option(help="Folder of your documents (default: Python's docs)")] = None,
    providers: Annotated[Optional[str], typer.Option(help="Comma list, e.g. library,tavily,arxiv")] = None,
    max_results: Annotated[Optional[int], typer.Option(min=1, max=50, help="Results per provider per query")] = None,
    target: Annotated[Optional[int], typer.Option(help="Sources to select (default PIPELINE_TARGET_COUNT or 10)")] = None,
    demand_id: Annotated[str, typer.Option(help="Policy row to apply (see `searchlake policy`)")] = "default",
    timeout: Annotated[Optional[int], typer.Option(help="Run timeout in seconds, >= 30 (PIPELINE_TIMEOUT)")] = None,
    max_target_count: Annotated[Optional[int], typer.Option(help="Cap on --target, 1-200 (PIPELINE_MAX_TARGET_COUNT)")] = None,
    max_fallback_rounds: Annotated[Optional[int], typer.Option(help="0-5 (PIPELINE_MAX_FALLBACK_ROUNDS)")] = None,
    here: Annotated[bool, typer.Option("--here", help="Run in this process, not in a `searchlake serve` (running or started for it)")] = False,
    details: Annotated[bool, typer.Option("--details", help="The run plan's stages and search policy as it starts; after the answer, the run's stages, outputs and top sources")] = False,
    questions: Annotated[Optional[Path], typer.Option(help="Research every question of this file (.csv, .jsonl or .txt): see docs/batch.md")] = None,
    concurrency: Annotated[int, typer.Option(help="With --questions: questions researched at once, 1-8")] = 1,
    batch: Annotated[Optional[str], typer.Option(help="With --questions: the batch's name (default: from the file's questions)")] = None,
) -> None:
    """A governed research run: plan, search in parallel, land, consolidate,
    filter, report. Exit status 0 when the run completes, 1 when it fails.
    With --questions FILE, every question of the file as a task of its own."""
    from flows.research_checks import ResearchRefused, check_request
    from schemas.request import BudgetRequest, RequestError, ResearchRequest
    budget = BudgetRequest(timeout_seconds=timeout, max_target_count=max_target_count,
                           max_fallback_rounds=max_fallback_rounds)
    if questions is not None:
        from flows.cli.batch import research_batch
        if question is not None or task_id is not None:
            raise UserError("--questions researches the file's questions: give no question and no --task-id")
        raise typer.Exit(research_batch(questions, concurrency, batch, library, providers, max_results, target,
                                        demand_id, budget))
    if batch is not None or concurrency != 1:
        raise UserError("--batch and --concurrency go with --questions FILE")
    try:
        request = ResearchRequest.build(
            CLI_LABELS, question=question or "", task_id=task_id, library=str(library) if library else None,
            providers=providers.split(",") if providers is not None else None, max_results=max_results,
            target=target, demand_id=demand_id, budget=budget)
        config = settings()  # a usable home, before a run starts
        request = check_request(request)
    except (RequestError, ResearchRefused) as exc:
        raise UserError(str(exc)) from None
    if not here:
        from flows.cli.handoff import hand_off
        handed = hand_off(config, request, details)
        if handed is not None:
            raise typer.Exit(print_run_outcome(handed.trace_id, "the run did not start", details, handed.summary))
    raise typer.Exit(run_here(request, details))


# a bad value is named as the user typed it
CLI_LABELS = {"target": "--target", "max_results": "--max-results", "task_id": "--task-id",
              "demand_id": "--demand-id"}


def run_here(request, details: bool = False) -> int:
    """Run the flow in this process (Prefect: PREFECT_API_URL, or a temporary server)."""
    # The terminal shows progress and the run summary; Prefect's own log
    # lines (a failed run's traceback among them) only when asked for.
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
    from flows import observer
    from flows.cli.console import TerminalObserver
    from flows.prefect_api import PrefectUnavailable, run_flow
    from flows.research import timed_flow
    with TerminalObserver(err, details) as watch:
        token = observer.current.set(watch)
        try:
            state = run_flow(timed_flow(request), **request.flow_parameters())
        except PrefectUnavailable as exc:
            raise UserError(str(exc)) from None
        finally:
            observer.current.reset(token)
    return print_run_outcome(str(state.state_details.flow_run_id), state.message, details)


def print_run_outcome(trace_id: str, failure: str | None, details: bool = False,
                      summary: RunSummary | None = None) -> int:
    """The answer (or, for a run that failed, why), how the run went in a few
    lines and where everything is; the exit status. `summary`: the run's, as
    its last event carried it (else the lake's row is read)."""
    config = settings()
    summary = summary or RunSummary.load(config, trace_id)
    if summary is None:
        err.print(f"error: the run did not start: {failure}", markup=False, highlight=False)
        return 1
    if summary.status == "complete":
        _print_lines(_answer(config, summary) + [""])
    if details or summary.status != "complete":
        _print_lines(summary.lines())
    if details and summary.status == "complete":
        print_top(summary.task_id, 10)
    _print_lines([f"task id:  {summary.task_id}   trace id: {summary.trace_id}", f"status:   {summary.headline()}"])
    if summary.without_model:
        _print_lines([f"model:    {summary.without_model}"])
    if summary.outputs.get("report"):
        _print_lines([f"report:   {summary.outputs['report']}  (.md and .json beside it)"])
    _print_lines([f"more:     searchlake report --task-id {summary.task_id}",
                  f"          searchlake sql \"select * from consolidated where task_id = '{summary.task_id}'\""])
    return summary.exit_code


def _answer(config, summary: RunSummary) -> list[str]:
    """The answer of the run's report as the terminal shows it; none when it published none."""
    from tasks.reporting.terminal import answer_lines
    report = _report_published_by(config, summary) or _report_in_lake(config, summary.task_id)
    return answer_lines(report, width=out.width if out.is_terminal else 80) if report else []


def _report_published_by(config, summary: RunSummary):
    """The report file the run's outputs name, read without opening the
    lake's catalog, when it is the task's report in this lake's folder."""
    from pydantic import ValidationError
    from schemas.report import ResearchReport
    from tasks.lake.files import read_published_report
    reports = summary.outputs.get("reports")
    data = read_published_report(config, summary.task_id, reports.get("json") if isinstance(reports, dict) else None)
    try:
        return ResearchReport.model_validate_json(data) if data else None
    except ValidationError:
        return None


def _report_in_lake(config, task_id: str):
    from pydantic import ValidationError
    from schemas.report import ResearchReport
    from tasks.lake.catalog import open_catalog
    from tasks.reporting.published import ReportNotFound, ReportUnreadable, load_report
    try:
        with open_catalog(config, "research: answer", read_only=True) as catalog:
            return ResearchReport.model_validate_json(load_report(catalog, task_id, "json"))
    except ReportUnreadable as exc:
        err.print(f"warning: {exc}; its answer is not shown", markup=False, highlight=False)
        return None
    except ReportNotFound:
        return None
    except ValidationError:  # said without what the file holds: it may be anything planted in its place
        err.print(f"warning: the report of task {task_id} in the lake is not a readable report.json; "
                  "its answer is not shown", markup=False, highlight=False)
        return None


def _print_lines(lines: list[str]) -> None:
    out.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


@app.command()
def policy(
    demand_id: Annotated[Optional[str], typer.Option(help="The demand whose policy to show or set")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="key=value, repeatable (needs --demand-id)")] = None,
) -> None:
    """Show the search policies, or set fields of one demand's policy."""
    from rich.table import Table
    from schemas.governance import PolicyError
    from tasks.lake.catalog import open_catalog
    from tasks.selection.policy import list_policies, parse_assignments, set_policy
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
    task_id: LatestTaskOpt = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="md, html or json")] = ReportFormat.md,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of printing")] = None,
    rebuild: Annotated[bool, typer.Option(help="Synthesize the report again from the lake first")] = False,
) -> None:
    """Print (or write) a task's report from the lake."""
    from tasks.lake.catalog import open_catalog
    from tasks.reporting.published import load_report
    if output is not None:
        check_output_file(output)
    config = settings()
    if rebuild:
        task_id = _rebuild_report(config, task_id)
    with open_catalog(config, "report", read_only=True) as catalog:
        task_id = task_or_latest(catalog, task_id)
        text = load_report(catalog, task_id, fmt.value)
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        write_output(output, text)
        err.print(f"wrote {output}")


def _rebuild_report(config, task_id: str | None) -> str:
    """Synthesize and publish the task's (or the latest task's) report again
    from the lake; the task it was. Publishing imports synthesis, a second or
    so that printing a published report does without."""
    from tasks.common.llm import LLMConfig
    from tasks.lake.catalog import open_catalog
    from tasks.reporting.report import publish_report
    from tasks.retrieval.plan_store import selected_source_ids, stored_plan
    with open_catalog(config, "report: plan", read_only=True) as catalog:
        task_id = task_or_latest(catalog, task_id)
        require_bundles(catalog, task_id)
        plan, source_ids = stored_plan(catalog, task_id), selected_source_ids(catalog, task_id)
    publish_report(config, task_id, plan, llm=LLMConfig.from_settings(config), source_ids=source_ids)
    return task_id


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
    port: Annotated[Optional[int], typer.Option(help="Port (default 8765; 0 picks a free one)")] = None,
    idle_minutes: Annotated[Optional[float], typer.Option(
        help="Stop after this many minutes with no run and no request (default: keep running)")] = None,
) -> None:
    """Serve the web page (ask, watch, read), the progress-event stream and the
    Model Context Protocol (/mcp); `searchlake research` runs in this server while it is up."""
    from flows.cli.autoserve import declare_run_settings
    from flows.launcher import ResearchLauncher
    from tasks.server.handoff import ServeRecord, fingerprint, new_key, remove_record
    from tasks.server.serve import ServeError, make_server
    if idle_minutes is not None and not idle_minutes > 0:
        raise UserError(f"--idle-minutes must be more than 0, not {idle_minutes:g}")
    config = settings()
    launcher = ResearchLauncher(config)
    key, salt = new_key(), new_key()
    declare_run_settings()  # the fingerprint covers the providers' keys and URLs, as the commands' does
    try:
        server = make_server(config, host, port, launcher, owner_key=key, fingerprint_salt=salt,
                             endpoints=[_mcp_endpoint(config, launcher)])
    except ServeError as exc:
        raise UserError(str(exc)) from None
    launcher.warm_up()
    threading.Thread(target=_end_dead_runs, args=(config,), name="dead runs", daemon=True).start()
    if idle_minutes is not None:
        server.stop_when_idle(idle_minutes * 60, launcher.last_run_ended)
    # uvicorn re-raises a caught SIGTERM once it has shut down: make that end
    # like Ctrl-C, so the record below is removed
    signal.signal(signal.SIGTERM, _interrupt)
    ServeRecord(server.url, os.getpid(), fingerprint(config, salt), key, salt).write(config)
    stops = f"stops after {idle_minutes:g} min idle or on Ctrl-C" if idle_minutes else "Ctrl-C stops it"
    err.print(f"searchlake on {server.url}/  (lake {config.lake_root}; pid {os.getpid()}; {stops})",
              markup=False, highlight=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        remove_record(config, os.getpid())
    if server.stopped_idle:
        launcher.wait_for_runs()  # one handed over as the server was stopping
        err.print(f"searchlake serve stopped: nothing to do for {idle_minutes:g} min", markup=False,
                  highlight=False)


def _mcp_endpoint(config, launcher):
    """The Model Context Protocol at /mcp (docs/mcp.md): its runs run in this
    server's launcher, in the library folders the page offers."""
    from flows.mcp_server import McpEndpoint, build_server, offered_libraries_only
    return McpEndpoint(build_server(config, launcher, library_rule=offered_libraries_only(config)))


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _end_dead_runs(config) -> None:
    """Runs a server killed before they ended (kill -9, a crash) are closed
    (interrupted, or complete if their report was out) when the next one starts, in the background: the page is up meanwhile."""
    from flows.run_view import end_dead_runs
    from tasks.common.redaction import redact
    from tasks.lake.catalog import CatalogBusy, CatalogError, CatalogUnavailable
    try:
        closed = end_dead_runs(config)
    except (CatalogBusy, CatalogUnavailable, CatalogError) as exc:
        err.print(f"could not look for interrupted runs: {redact(str(exc).splitlines()[0])}", markup=False,
                  highlight=False)
        return
    for run in closed:
        err.print(f"run {run.trace_id} of {run.task_id}: {run.message}", markup=False, highlight=False)
