"""The `searchlake` command line. Quick commands never import Prefect."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Research questions to cited evidence, kept in a queryable lake.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"


class UserError(Exception):
    """A problem with the user's input: one line, non-zero exit."""


def task_id_option(value: str | None) -> str | None:
    if value is None:
        return None
    from schemas.bundle import check_identifier
    try:
        return check_identifier(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


TaskIdOpt = Annotated[Optional[str], typer.Option("--task-id", callback=task_id_option,
                                                  help="Task the bundles belong to")]


def settings():
    from tasks.config import Settings
    return Settings()


def render_table(result, title: str | None = None) -> None:
    table = Table(title=title, show_lines=False)
    for column in result.columns:
        table.add_column(column, overflow="fold")
    for row in result.rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    out.print(table)


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
) -> None:
    """Land bundle files written by other agents."""
    from tasks.catalog import open_catalog
    from tasks.landing import land_files
    with open_catalog(settings(), "ingest") as catalog:
        report = land_files(catalog, paths, task_id=task_id, replace=replace)
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
    from tasks.catalog import open_catalog
    from tasks.consolidation import consolidate as run
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
) -> None:
    """Run read-only SQL over the lake and the catalog."""
    from tasks.catalog import open_catalog
    from tasks.query import run_query, to_csv, to_json
    with open_catalog(settings(), "sql", read_only=True) as catalog:
        result = run_query(catalog, query)
    if fmt is Format.csv:
        sys.stdout.write(to_csv(result))
    elif fmt is Format.json:
        sys.stdout.write(to_json(result) + "\n")
    else:
        render_table(result)


@app.command()
def top(task_id: TaskIdOpt = None,
        limit: Annotated[int, typer.Option(min=1, help="How many sources")] = 10) -> None:
    """Print a task's top consolidated sources."""
    if not task_id:
        raise UserError("name a task with --task-id T")
    print_top(task_id, limit)


def print_top(task_id: str, limit: int) -> None:
    from tasks.catalog import open_catalog
    from tasks.query import top_sources
    with open_catalog(settings(), "top", read_only=True) as catalog:
        result = top_sources(catalog, task_id, limit)
    render_table(result, title=f"top sources of {task_id}")


@app.command()
def compact(task_id: TaskIdOpt = None) -> None:
    """Merge each task's small results files into one."""
    from tasks.catalog import open_catalog
    from tasks.compaction import compact_results
    with open_catalog(settings(), "compact") as catalog:
        for line in compact_results(catalog, task_id):
            out.print(line)


@app.command()
def demo() -> None:
    """Land the shipped sample bundles, consolidate them, print the top sources."""
    from tasks.catalog import open_catalog
    from tasks.consolidation import consolidate as run
    from tasks.landing import land_files
    with open_catalog(settings(), "demo") as catalog:
        report = land_files(catalog, [SAMPLES])
        print_landing(report)
        out.print(run(catalog, "sample").line())
    print_top("sample", 10)


def main() -> None:
    from duckdb import Error as DuckDBError
    from tasks.catalog import CatalogBusy
    from tasks.consolidation import UnknownTask
    try:
        app()
    except (UserError, CatalogBusy, UnknownTask) as exc:
        _fail(str(exc).strip("'\""))
    except ValidationError as exc:
        first = exc.errors()[0]
        _fail(f"invalid setting {'.'.join(map(str, first['loc']))}: {first['msg']}")
    except DuckDBError as exc:
        _fail(str(exc).splitlines()[0])


def _fail(message: str) -> None:
    err.print(f"error: {message}", markup=False, highlight=False)
    sys.exit(2)


if __name__ == "__main__":
    main()
