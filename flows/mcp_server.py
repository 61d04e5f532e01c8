"""The Model Context Protocol server agents use (docs/mcp.md): research a
question into the lake, read its reports, list its tasks, read a task's top
sources, query it with SQL. Built on the official SDK's MCPServer (mcp 2.x);
served over stdio by `searchlake mcp` (flows/cli/mcp_command.py) and over
streamable HTTP at /mcp of `searchlake serve` (McpEndpoint).

Each tool calls what the matching command calls — the research run through
the launcher `serve` uses, with the request checked as `searchlake research`
checks it; SQL through the sandbox of `searchlake sql` — and a problem the
user can act on (an unknown task, refused SQL, a bad argument, a missing
key) comes back as a tool error whose text is the one line the command would
print, never a traceback, and the server goes on."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from flows.launcher import ResearchLauncher
from flows.mcp_research import REPORT_URI, report_uri, research_run
from schemas.agent import QueryRows, RankedSource, ResearchOutcome, TaskEntry, TaskList, TopSources
from schemas.bundle import check_identifier
from schemas.request import BudgetRequest, ResearchRequest
from schemas.errors import SearchlakeError, UserError
from tasks.common.redaction import redact
from tasks.common.settings import Settings

INSTRUCTIONS = """\
searchlake keeps research in a lake: `research` runs a question through the search providers \
(your document library offline; web, academic and news engines when their keys are set) and \
answers with cited points, each citation a number of the sources listed with it. Every run is a \
task: `list_tasks` lists them, `read_report` reads a task's whole report (its evidence, verbatim \
quotes with offsets), `top_sources` its best sources, and `sql` queries every view of the lake \
(bundles, results, consolidated, error_log, runs, reports, report_citations, …) read-only."""

# a bad value is named as the agent gave it
LABELS = {"budget.timeout_seconds": "timeout", "budget.max_target_count": "max_target_count",
          "budget.max_fallback_rounds": "max_fallback_rounds"}
BUDGET_NAMES = {"timeout_seconds": "timeout", "max_target_count": "max_target_count",
                "max_fallback_rounds": "max_fallback_rounds"}

REPORT_TYPES = {"md": "text/markdown", "json": "application/json", "html": "text/html"}
MOST_TASKS = 1000
MOST_SOURCES = 200
MOST_ROWS = 10_000

# asked → the folder the run may search (None: the default library), or a UserError
LibraryRule = Callable[[str | None], str | None]


class BadTaskId(UserError, ValueError):
    """A task id that cannot name a task (it becomes a path part)."""


def any_library(asked: str | None) -> str | None:
    """Over stdio the agent runs as its user, who may name any folder, as on the command line."""
    return asked


def offered_libraries_only(settings: Settings) -> LibraryRule:
    """Over HTTP, as on the page: the default library or a folder the server offers."""
    from tasks.server.web.app import offered_library
    return lambda asked: offered_library(settings, asked)


def one_line(exc: SearchlakeError) -> str:
    """The error's message as one line, with no secret in it (whatever raised it)."""
    return " ".join(redact(exc.line).split())


def said_in_one_line(exc: SearchlakeError) -> CallToolResult:
    """A searchlake error as the tool error an agent reads."""
    return CallToolResult(content=[TextContent(text=one_line(exc))], is_error=True)


def one_line_errors(tool: Callable) -> Callable:
    """`tool`, with searchlake's errors coming back as one-line tool errors.
    Anything else is a bug: the SDK logs it and tells the agent only that the tool failed."""
    if inspect.iscoroutinefunction(tool):
        @functools.wraps(tool)
        async def run_async(*args, **kwargs):
            try:
                return await tool(*args, **kwargs)
            except SearchlakeError as exc:
                return said_in_one_line(exc)
        return run_async

    @functools.wraps(tool)
    def run(*args, **kwargs):
        try:
            return tool(*args, **kwargs)
        except SearchlakeError as exc:
            return said_in_one_line(exc)
    return run


def structured(model: BaseModel) -> CallToolResult:
    """A result as data (checked against the tool's output schema) and as its JSON text."""
    data = model.model_dump(mode="json")
    return CallToolResult(content=[TextContent(text=json.dumps(data, ensure_ascii=False, indent=1))],
                          structured_content=data)


def checked_task_id(task_id: str) -> str:
    try:
        return check_identifier(task_id)
    except ValueError as exc:
        raise BadTaskId(f"invalid task_id {task_id!r}: {exc}") from None


# The research tool's arguments: what `searchlake research` takes, checked as it checks them
Question = Annotated[str, Field(description="The research question, in English or Chinese (at most 2000 characters)")]
Library = Annotated[str | None, Field(
    description="Folder of documents (Markdown, text, HTML, PDF) to search; default: the configured library")]
Providers = Annotated[list[str] | None, Field(
    description='Providers to search, e.g. ["library", "tavily", "arxiv"]; default: every configured one')]
ResumedTask = Annotated[str | None, Field(
    description="Resume this task (nothing that already landed is queried again); default: a new task")]
Target = Annotated[int | None, Field(description="Sources to select, at least 1 (default PIPELINE_TARGET_COUNT or 10)")]
MaxResults = Annotated[int | None, Field(description="Results per provider per query, 1-50 (default 10)")]
Timeout = Annotated[int | None, Field(
    description="Run timeout in seconds, at least 30 (default PIPELINE_TIMEOUT or 1800)")]
MaxTargetCount = Annotated[int | None, Field(description="Cap on target, 1-200")]
MaxFallbackRounds = Annotated[int | None, Field(
    description="Searches again with new keywords when too few sources pass, 0-5")]
DemandId = Annotated[str, Field(description="The search policy to apply (`searchlake policy` lists them)")]
TaskId = Annotated[str, Field(description="The task (research returns it; list_tasks lists them)")]
ReportFormat = Annotated[Literal["md", "json", "html"], Field(
    description="md (default), json (every field, the evidence with offsets) or html")]


class SearchlakeTools:
    """The tools, over one home's settings and one launcher."""

    def __init__(self, settings: Settings, launcher: ResearchLauncher, library_rule: LibraryRule):
        self.settings = settings
        self.launcher = launcher
        self.library_rule = library_rule

    async def research(
        self, question: Question, ctx: Context, library: Library = None, providers: Providers = None,
        task_id: ResumedTask = None, target: Target = None, max_results: MaxResults = None, timeout: Timeout = None,
        max_target_count: MaxTargetCount = None, max_fallback_rounds: MaxFallbackRounds = None,
        demand_id: DemandId = "default",
    ) -> Annotated[CallToolResult, ResearchOutcome]:
        """Research a question into the lake and answer it with cited points.

        Runs the governed research run of `searchlake research`: plans queries, searches the providers in
        parallel, lands every result in the lake, deduplicates and ranks, filters, and writes the task's
        report. Takes from seconds (a small library) to minutes (web providers); progress notifications say
        what it is doing. Returns the answer's points, each with the numbers of the sources it cites, the
        cited sources (number, title, URL) and the task id that read_report, top_sources and sql take. A run
        that cannot start or that a gate stops is an error saying why and what to change."""
        request = await anyio.to_thread.run_sync(functools.partial(
            self._checked_request, question=question, library=library, providers=providers, task_id=task_id,
            target=target, max_results=max_results, demand_id=demand_id,
            budget=BudgetRequest(timeout_seconds=timeout, max_target_count=max_target_count,
                                 max_fallback_rounds=max_fallback_rounds)))

        async def send_progress(percent: float, message: str) -> None:
            await ctx.report_progress(percent, 100, message)

        finished = await research_run(self.settings, self.launcher, request, send_progress)
        return CallToolResult(content=[TextContent(text=finished.text)],
                              structured_content=finished.outcome.model_dump(mode="json"))

    def _checked_request(self, **values: Any) -> ResearchRequest:
        """The request as `searchlake research` builds and checks it (schemas/request.py,
        flows/research_checks.py), its library folder one this transport allows."""
        from flows.research_checks import check_request
        request = ResearchRequest.build(LABELS, **values)
        request = request.model_copy(update={"library": self.library_rule(request.library)})
        return check_request(request, BUDGET_NAMES)

    def read_report(self, task_id: TaskId, format: ReportFormat = "md") -> CallToolResult:
        """Read a task's published report: its answer, the evidence (verbatim quotes of the sources, with the
        number of the source each cites), what the sources do not cover, and the cited sources."""
        return CallToolResult(content=[TextContent(text=self.report_text(task_id, format))])

    def report_text(self, task_id: str, fmt: str) -> str:
        from tasks.lake.catalog import open_catalog
        from tasks.reporting.report import load_report
        task_id = checked_task_id(task_id)
        with open_catalog(self.settings, "mcp: report", read_only=True) as catalog:
            return load_report(catalog, task_id, fmt)

    def list_tasks(
        self,
        limit: Annotated[int, Field(ge=1, le=MOST_TASKS, description="How many tasks, the latest first")] = 20,
    ) -> Annotated[CallToolResult, TaskList]:
        """List the lake's tasks, the latest first: each task's id, question, how many research runs it had,
        how the latest ended and when, and when its latest bundle landed."""
        return structured(self.task_list(limit))

    def task_list(self, limit: int) -> TaskList:
        from tasks.lake.catalog import open_catalog
        from tasks.lake.query import task_list
        from tasks.lake.result_text import json_records
        with open_catalog(self.settings, "mcp: tasks", read_only=True) as catalog:
            found = json_records(task_list(catalog, limit + 1))  # one more tells whether there are more
        return TaskList(tasks=[TaskEntry(**row) for row in found[:limit]], more=len(found) > limit)

    def top_sources(
        self,
        task_id: TaskId,
        limit: Annotated[int, Field(ge=1, le=MOST_SOURCES, description="How many sources")] = 10,
    ) -> Annotated[CallToolResult, TopSources]:
        """A task's top consolidated sources, best first: rank, score_final, how many queries found it, the
        query that found it first, title and URL."""
        from tasks.lake.catalog import open_catalog
        from tasks.lake.query import task_top_sources
        from tasks.lake.result_text import json_records
        task_id = checked_task_id(task_id)
        with open_catalog(self.settings, "mcp: top", read_only=True) as catalog:
            found = json_records(task_top_sources(catalog, task_id, limit))
        return structured(TopSources(task_id=task_id, sources=[RankedSource(**row) for row in found]))

    def sql(
        self,
        query: Annotated[str, Field(
            description="A SELECT (or DESCRIBE, SUMMARIZE, SHOW TABLES, EXPLAIN) over the lake's views")],
        max_rows: Annotated[int, Field(ge=1, le=MOST_ROWS,
                                       description="Rows to return at most (row_count says how many it had)")] = 200,
    ) -> Annotated[CallToolResult, QueryRows]:
        """Query the lake with read-only SQL (DuckDB), in the sandbox of `searchlake sql`: only the lake's
        views — bundles, results, consolidated, search_read_cursor, error_log, quarantine, runs, plans,
        reports, report_citations, drops, … (`SHOW TABLES` lists them, `DESCRIBE v` gives a view's columns) —
        and plain functions, plus url_domain(url); no files, settings, secrets or network. Returns the
        columns and the rows as JSON values."""
        from tasks.lake.catalog import open_catalog
        from tasks.lake.query import run_analyst_query
        from tasks.lake.result_text import json_rows
        # The command's other bounds stay with the command: a process-wide memory limit and a main-thread
        # alarm would reach runs this server holds. The query keeps its own: the row and size caps, the
        # engine's memory limit and SEARCHLAKE_SQL_TIMEOUT (run_analyst_query, Catalog.confine_to_lake).
        with open_catalog(self.settings, "mcp: sql", read_only=True, confined=True) as catalog:
            result = run_analyst_query(catalog, query)
        given = replace(result, rows=result.rows[:max_rows])
        return structured(QueryRows(columns=result.columns, rows=json_rows(given), row_count=len(result.rows),
                                    truncated=len(result.rows) > max_rows))

    # -- resources
    def report_resource(self, task_id: str, fmt: str) -> str:
        try:
            return self.report_text(task_id, fmt)
        except SearchlakeError as exc:
            unknown = isinstance(exc, (BadTaskId, LookupError))  # no such task or report: no such resource
            raise (ResourceNotFoundError if unknown else ResourceError)(one_line(exc)) from None

    def task_index(self) -> str:
        try:
            listed = self.task_list(100)
        except SearchlakeError as exc:
            raise ResourceError(one_line(exc)) from None
        return json.dumps({"tasks": [{**task.model_dump(mode="json"), "report": report_uri(task.task_id)}
                                     for task in listed.tasks], "more": listed.more}, ensure_ascii=False, indent=1)


READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
RESEARCHES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=True)


def build_server(settings: Settings, launcher: ResearchLauncher, *, library_rule: LibraryRule = any_library,
                 lifespan: Callable[[MCPServer], AbstractAsyncContextManager] | None = None) -> MCPServer:
    """The MCP server over one home. `lifespan`: what runs while it serves
    (`searchlake mcp` keeps Python's output off the protocol there)."""
    tools = SearchlakeTools(settings, launcher, library_rule)
    made = {tool.name: tool for tool in (
        _tool(tools.research, "Research a question", RESEARCHES),
        _tool(tools.read_report, "Read a report", READS),
        _tool(tools.list_tasks, "List tasks", READS),
        _tool(tools.top_sources, "Top sources", READS),
        _tool(tools.sql, "SQL over the lake", READS),
    )}
    server = MCPServer("searchlake", title="searchlake", instructions=INSTRUCTIONS, version=_version(),
                       log_level="WARNING", lifespan=lifespan, tools=list(made.values()),
                       middleware=[ArgumentsInOneLine(made)])
    _add_resources(server, tools)
    return server


def _tool(method: Callable, title: str, annotations: ToolAnnotations) -> Tool:
    """A tool named as its method, described by its docstring (what the agent reads to choose it)."""
    return Tool.from_function(one_line_errors(method), name=method.__name__, title=title,
                              description=_paragraphs(inspect.getdoc(method) or ""), annotations=annotations)


def _paragraphs(doc: str) -> str:
    """A docstring's paragraphs, each on one line (its line breaks only fit the source)."""
    return "\n\n".join(" ".join(part.split()) for part in doc.split("\n\n"))


def _add_resources(server: MCPServer, tools: SearchlakeTools) -> None:
    server.resource("searchlake://tasks", name="tasks", mime_type="application/json",
                    description="The lake's latest 100 tasks, the latest first, with their reports' URIs")(
        tools.task_index)
    for fmt, mime_type in REPORT_TYPES.items():
        server.resource(REPORT_URI.format(task_id="{task_id}", format=fmt), name=f"report.{fmt}",
                        mime_type=mime_type, description=f"A task's published report ({fmt})")(
            _report_reader(tools, fmt))


def _report_reader(tools: SearchlakeTools, fmt: str) -> Callable[[str], str]:
    # a template's function takes exactly its URI's parameters: the format is bound here
    def read(task_id: str) -> str:
        return tools.report_resource(task_id, fmt)
    return read


class ArgumentsInOneLine:
    """Middleware: a tool call's arguments checked against the tool's own
    input model before the SDK calls it, so that a bad one comes back as one
    line naming it (the SDK's own message spans lines and links pydantic's
    documentation). The SDK's check runs after, on arguments found good."""

    def __init__(self, tools: Mapping[str, Tool]):
        self.tools = tools

    async def __call__(self, ctx, call_next):
        params = ctx.params if ctx.method == "tools/call" and isinstance(ctx.params, Mapping) else None
        tool = self.tools.get(params.get("name")) if params else None
        if tool is not None:
            try:
                tool.fn_metadata.validate_arguments(params.get("arguments") or {})
            except ValidationError as exc:
                return CallToolResult(content=[TextContent(text=argument_error(exc))], is_error=True)
        return await call_next(ctx)


def argument_error(exc: ValidationError) -> str:
    """The first bad argument, named as the agent gave it, in one line."""
    error = exc.errors()[0]
    return f"bad argument {'.'.join(map(str, error['loc'])) or 'arguments'}: {error['msg']}"


class McpEndpoint:
    """The server at /mcp of `searchlake serve`, over streamable HTTP: an
    ASGI app behind serve's guards (the Host, the token, where a request
    that changes something comes from), and the SDK's session manager, which
    runs while serve serves (tasks/server/serve.py, Endpoint)."""

    path = "/mcp"

    def __init__(self, server: MCPServer):
        # The SDK's own Host and Origin check stays off: serve's guards make it, against the names serve
        # is configured with (which the SDK's loopback defaults do not know), before a request gets here.
        server.streamable_http_app(streamable_http_path=self.path,
                                   transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.sessions = server.session_manager

    async def __call__(self, scope, receive, send) -> None:
        await self.sessions.handle_request(scope, receive, send)

    def running(self) -> AbstractAsyncContextManager:
        return self.sessions.run()


def _version() -> str:
    try:
        return version("searchlake")
    except PackageNotFoundError:
        return ""
