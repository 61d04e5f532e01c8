"""What every searchlake command shares: the app, the consoles, option types
and how user errors and tables are shown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Research questions to cited evidence, kept in a queryable lake.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


class UserError(Exception):
    """A problem with the user's input: one line, non-zero exit."""


def task_id_option(value: str | None) -> str | None:
    if value is None:
        return None
    from schemas.bundle import check_identifier
    try:
        return check_identifier(value)
    except ValueError as exc:
        # UserError, not typer.BadParameter: Typer would print a multi-line usage box.
        raise UserError(f"invalid --task-id {value!r}: {exc}") from None


TaskIdOpt = Annotated[Optional[str], typer.Option("--task-id", callback=task_id_option,
                                                  help="Task the bundles belong to")]


def settings():
    from tasks.common.settings import Settings
    return Settings()


def render_table(result, title: str | None = None) -> None:
    table = Table(title=title, show_lines=False)
    for column in result.columns:
        table.add_column(column, overflow="fold")
    for row in result.rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    out.print(table)


def print_top(task_id: str, limit: int) -> None:
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import top_sources
    with open_catalog(settings(), "top", read_only=True) as catalog:
        result = top_sources(catalog, task_id, limit)
    render_table(result, title=f"top sources of {task_id}")
