"""The `searchlake` command line. Quick commands never import Prefect."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from flows.cli import research as _research  # noqa: F401  (registers the research-side commands)
from flows.cli import history as _history  # noqa: F401  (registers `history`)
from flows.cli import watch as _watch  # noqa: F401  (registers `watch` and `changes`)
from flows.cli import mcp_command as _mcp  # noqa: F401  (registers `mcp`)
from flows.cli.common import (SAMPLES, LatestTaskOpt, TaskIdOpt, UserError, app, err, out, print_top,
                              render_table, settings)
from flows.cli.tables import Layout


@app.command()
def schema() -> None:
    """Print the JSON Schema of SearchResultBundle."""
    from schemas.bundle import SearchResultBundle
    print(json.dumps(SearchResultBundle.model_json_schema(), indent=2))


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Bundle files or folders of them")],
    task_id: TaskIdOpt = None,
    replace: Annotated[bool, typer.Option(help="Replace a different bundle with the same task and query")] = False,
    library: Annotated[list[Path] | None, typer.Option(
        "--library", help="A library folder the bundles' file: URLs may point into (repeatable)")] = None,
) -> None:
    """Land bundle files written by other agents."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.landing import land_files
    with open_catalog(settings(), "ingest") as catalog:
        report = land_files(catalog, paths, task_id=task_id, replace=replace, libraries=library or ())
    print_landing(report)
    if report.refused:
        raise typer.Exit(1)


def print_landing(report) -> None:
    out.print(f"landed {len(report.landed)} bundles ({report.items_landed} items), "
              f"replaced {len(report.replaced)}, unchanged {len(report.unchanged)}, "
              f"refused {len(report.refused)}")
    for refusal in report.refused:
        err.print(refusal.line(), markup=False, highlight=False)


@app.command()
def consolidate(
    task_id: TaskIdOpt = None,
    all_tasks: Annotated[bool, typer.Option("--all", help="Consolidate every task")] = False,
    rebuild: Annotated[bool, typer.Option(help="Forget the cursor and read every bundle again")] = False,
) -> None:
    """Deduplicate and rank a task's sources through its resumable cursor."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.consolidation import consolidate as run
    if not task_id and not all_tasks:
        raise UserError("name a task with --task-id T, or use --all")
    with open_catalog(settings(), "consolidate") as catalog:
        tasks = [task_id] if task_id else [r[0] for r in catalog.rows("known_tasks")]
        for task in tasks:
            out.print(run(catalog, task, rebuild=rebuild).line())


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command("sql")
def sql_command(
    query: Annotated[str, typer.Argument(help="SQL over the views bundles, results, consolidated, ...")],
    fmt: Annotated[Format, typer.Option("--format", help="table, csv or json")] = Format.table,
    layout: Annotated[Layout, typer.Option(
        help="table: one line per row; vertical: one `column │ value` block per row; auto: a table when "
             "the columns fit the terminal, else vertical")] = Layout.auto,
    wrap: Annotated[bool, typer.Option("--wrap", help="Show whole cells, wrapped, rather than cut with …")] = False,
) -> None:
    """Run read-only SQL over the lake and the catalog."""
    from flows.cli.limits import memory_capped, within
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import QueryTimedOut, QueryTooLarge, run_analyst_query
    config = settings()
    stopped = QueryTimedOut(f"the command ran longer than {config.sql_timeout:g} s and was stopped "
                            "(SEARCHLAKE_SQL_TIMEOUT sets the limit)")
    too_large = QueryTooLarge(f"the command needs more memory than {config.sql_memory_mb} MB "
                              "(SEARCHLAKE_SQL_MEMORY_MB sets the limit)")
    try:
        with memory_capped(config.sql_memory_mb), within(config.sql_timeout, stopped):
            with open_catalog(config, "sql", read_only=True, confined=True) as catalog:
                result = run_analyst_query(catalog, query)
            shown = formatted_result(result, fmt, layout=layout, wrap=wrap)  # written whole, or not at all
    except MemoryError:
        raise too_large from None
    sys.stdout.write(shown)


def formatted_result(result, fmt: Format, **table_options) -> str:
    from tasks.lake.result_text import to_csv, to_json
    if fmt is Format.csv:
        return to_csv(result)
    if fmt is Format.json:
        return to_json(result) + "\n"
    with out.capture() as shown:
        render_table(result, **table_options)
    return shown.get()


def print_result(result, fmt: Format, **table_options) -> None:
    sys.stdout.write(formatted_result(result, fmt, **table_options))


@app.command()
def top(task_id: LatestTaskOpt = None,
        limit: Annotated[int, typer.Option(min=1, help="How many sources")] = 10) -> None:
    """Print a task's top consolidated sources."""
    print_top(task_id, limit)


@app.command("tasks")
def tasks_command(
    limit: Annotated[int, typer.Option(min=1, max=MOST_TASKS, help="How many tasks, the latest first")] = 20,
    fmt: Annotated[Format, typer.Option("--format", help="table, csv or json")] = Format.table,
) -> None:
    """List the lake's tasks, the latest first: question, runs, how the last one ended."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import task_list
    with open_catalog(settings(), "tasks", read_only=True) as catalog:
        found = task_list(catalog, limit + 1)  # one more tells whether there are more
    shown = replace(found, rows=found.rows[:limit])
    if fmt is not Format.table:
        print_result(shown, fmt)
    elif not shown.rows:
        err.print("no task in the lake yet: searchlake research \"QUESTION\" starts one", markup=False,
                  highlight=False)
    else:
        print_task_list(shown.rows, more=len(found.rows) > limit)


MOST_TASKS = 1_000_000


def print_task_list(rows: list[tuple], more: bool) -> None:
    """Two lines a task: its id alone (never cut: it is what the user copies);
    then when its latest run started and how it went, and the question, cut
    to the terminal's width."""
    from flows.cli.tables import clipped, one_line
    for task_id, question, runs, last_status, last_run_at, last_landed_at in rows:
        if runs:
            facts = [_local_minute(last_run_at), last_status, f"{runs} run{'' if runs == 1 else 's'}"]
        else:
            facts = [f"landed {_local_minute(last_landed_at)}", "no run"]
        line = " · ".join(facts + ([one_line(question)] if question else []))
        out.print(Text(task_id))
        out.print(Text("  ") + clipped(line, out.width - 2))
    if more:
        out.print(Text(f"(the latest {len(rows)}; --limit N shows more)"))


def _local_minute(moment) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment is not None else "?"


@app.command()
def export(
    task_id: TaskIdOpt = None,
    all_tasks: Annotated[bool, typer.Option("--all", help="Export every task")] = False,
) -> None:
    """Rewrite the plain Parquet copies dashboards read (exports/<table>/task_id=<task>/);
    the flows keep them current, this writes them for a lake made before they existed."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.exports import EXPORTED, refresh_exports
    if not task_id and not all_tasks:
        raise UserError("name a task with --task-id T, or use --all")
    with open_catalog(settings(), "export") as catalog:
        known = [r[0] for r in catalog.rows("known_tasks")]
        if task_id and task_id not in known:
            raise UserError(f"no bundles have landed for task {task_id!r}")
        for task in [task_id] if task_id else known:
            refresh_exports(catalog, task, strict=True)  # a link planted in exports/: one line, status 2
            out.print(f"{task}: exported {', '.join(EXPORTED)}")


@app.command()
def compact(keep_days: Annotated[float, typer.Option(
        min=0, help="Keep snapshots (time travel) this many days back")] = 7.0) -> None:
    """Merge the lake's small table files, expire old snapshots, delete unused files."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.compaction import compact as run
    with open_catalog(settings(), "compact") as catalog:
        for line in run(catalog, keep_days):
            out.print(line)


@app.command()
def doctor(repair: Annotated[bool, typer.Option(
        "--repair", help="Remove the views and macros searchlake did not write, and make its own again")] = False
           ) -> None:
    """Check that the catalog holds only searchlake's own views and macros (anyone who can write a shared
    catalog can define others, and searchlake refuses to run beside them)."""
    from flows.cli.tables import clipped, one_line
    from tasks.lake.catalog import open_catalog, repair_definitions
    from tasks.lake.definitions import foreign_definitions
    with open_catalog(settings(), "doctor", own_definitions_only=False) as catalog:
        found = repair_definitions(catalog) if repair else foreign_definitions(catalog.con)
    if not found:
        out.print("the catalog holds only searchlake's own views and macros", markup=False, highlight=False)
        return
    said = "removed" if repair else "not searchlake's"
    for definition in found:
        out.print(Text(f"{said}: {definition.said()}"))
        if definition.body and not repair:
            out.print(Text("  ") + clipped(one_line(definition.body), out.width - 2))
    if not repair:
        err.print("run `searchlake doctor --repair` to remove them (a table is renamed aside, never dropped)",
                  markup=False, highlight=False)
        raise typer.Exit(1)


@app.command()
def demo() -> None:
    """Land the shipped sample bundles, consolidate them, print the top sources."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.consolidation import consolidate as run
    from tasks.lake.landing import land_files
    with open_catalog(settings(), "demo") as catalog:
        report = land_files(catalog, [SAMPLES])
        print_landing(report)
        out.print(run(catalog, "sample").line())
    print_top("sample", 10)


@app.command("migrate-catalog")
def migrate_catalog() -> None:
    """Move the home's DuckDB-file catalog (catalog.ducklake, earlier versions') to SQLite (catalog.sqlite),
    which notebooks and dashboards may read while searchlake works."""
    from tasks.lake.catalog_migration import migrate_catalog as run
    for line in run(settings(mention_migration=False)):
        out.print(line, markup=False, highlight=False)


def main() -> None:
    from schemas.errors import SearchlakeError
    try:
        # Not standalone: click's usage errors come here as exceptions, to be
        # said in one line rather than a boxed usage panel.
        code = app(sys.argv[1:] or ["--help"], standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors: unknown command or option, bad value
        _fail(usage_line(exc))
    except (typer.Abort, KeyboardInterrupt):
        _fail("interrupted")
    except SearchlakeError as exc:  # what the class says decides the exit status
        _fail(exc.line, exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def usage_line(exc) -> str:
    """A click usage error as one line that says where help is."""
    # typer words a refused choice "Value error, 'xml' is not one of ..."
    message = " ".join(exc.format_message().replace("Value error, ", "").split())
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "searchlake"
    return f"{message} (see: {command} --help)"


def _fail(message: str, code: int = 2) -> None:
    from tasks.common.redaction import redact  # no secret in any message, whatever raised it
    err.print(f"error: {' '.join(redact(message).split())}", markup=False, highlight=False)
    sys.exit(code)


if __name__ == "__main__":
    main()
