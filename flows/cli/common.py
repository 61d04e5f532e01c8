"""What every searchlake command shares: the app, the consoles, option types
and how user errors and tables are shown."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from schemas.errors import UserError  # a problem with the user's input: one line, non-zero exit

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Research questions to cited evidence, kept in a queryable lake.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"




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
LatestTaskOpt = Annotated[Optional[str], typer.Option("--task-id", callback=task_id_option,
                                                      help="The task (default: the latest; see searchlake tasks)")]


def settings(*, mention_migration: bool = True):
    """The settings, once their home (and catalog folder) is known to be usable."""
    from tasks.common.settings import Settings
    config = Settings()
    check_writable_folder(config.home, "SEARCHLAKE_HOME")
    if config.catalog_is_embedded:
        check_writable_folder(config.catalog_path.parent, "the catalog's folder")
        _mention_an_earlier_catalog(config)
        if mention_migration:
            _mention_the_duckdb_file_catalog(config)
    return config


_MENTIONED: set[str] = set()


def _mention_the_duckdb_file_catalog(config) -> None:
    """A home from before the SQLite catalog keeps its DuckDB file, which
    admits one program at a time: said once per process, with the way out."""
    if not config.catalog_is_earlier_file or str(config.catalog_path) in _MENTIONED:
        return
    _MENTIONED.add(str(config.catalog_path))
    err.print(f"note: this home keeps its catalog in the DuckDB file {config.catalog_path}, which one program "
              "at a time may open (a notebook holding it stops searchlake); `searchlake migrate-catalog` moves "
              "it to SQLite, which others may read while searchlake works", markup=False, highlight=False)


def _mention_an_earlier_catalog(config) -> None:
    """Versions before the DuckLake lake kept their catalog in catalog.duckdb:
    its lake is not read, and a user upgrading should hear it (until the new one exists)."""
    earlier = Path(config.home) / "catalog.duckdb"
    if earlier.exists() and not config.catalog_path.exists():
        err.print(f"note: {earlier} is the catalog of an earlier searchlake; this version keeps the lake in "
                  f"{config.catalog_path} and does not read the earlier one (land its raw bundles again with "
                  f"`searchlake ingest {Path(config.lake_root) / 'raw'}`)", markup=False, highlight=False)


def check_writable_folder(folder: Path, what: str) -> None:
    """UserError unless `folder` is (or can be made) a folder we can write in."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if folder.exists() and not folder.is_dir():
            reason = "it is a file, not a folder"
        raise UserError(f"{what} {str(folder)!r} is not usable: {reason}") from None


def check_output_file(path: Path) -> None:
    """UserError unless `path` names a file that can be written, before any work."""
    if path.is_dir():
        raise UserError(f"--output {str(path)!r} is a folder; name a file")
    if not path.parent.is_dir():
        raise UserError(f"--output {str(path)!r}: folder {str(path.parent)!r} does not exist")


def write_output(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {str(path)!r}: {exc.strerror or type(exc).__name__}") from None


def require_bundles(catalog, task_id: str) -> None:
    """UserError when the lake holds no bundle of `task_id` (tasks/lake/query.py)."""
    from tasks.lake.query import require_bundles as required
    required(catalog, task_id)


def render_table(result, title: str | None = None, layout=None, wrap: bool = False) -> None:
    """A query's rows at the terminal (see flows/cli/tables.py): the lake's
    text as text, never markup or a control sequence."""
    from flows.cli.tables import Layout, render_rows
    from tasks.lake.result_text import text_rows
    render_rows(out, result.columns, text_rows(result, to_the_second=True), layout=layout or Layout.auto, wrap=wrap,
                title=title)


def task_or_latest(catalog, task_id: str | None) -> str:
    """`task_id`, or else the lake's latest task (the first `searchlake tasks`
    lists), named on stderr so that the user knows which."""
    if task_id:
        return task_id
    from tasks.lake.query import latest_task
    latest = latest_task(catalog)
    if latest is None:
        raise UserError("the lake holds no task yet: searchlake research \"QUESTION\" starts one "
                        "(searchlake ingest lands other agents' bundles)")
    err.print(f"latest task: {latest} (--task-id names another; searchlake tasks lists them)", markup=False,
              highlight=False)
    return latest


def print_top(task_id: str | None, limit: int) -> None:
    """A task's top sources at the terminal: what tells them apart first (the
    title, where each is: a file's name, a page's host and path), the query
    that found each last (the whole URL is in the `consolidated` view)."""
    from schemas.urls import location_of
    from tasks.lake.catalog import open_catalog
    from tasks.lake.query import QueryResult, task_top_sources
    with open_catalog(settings(), "top", read_only=True) as catalog:
        task_id = task_or_latest(catalog, task_id)
        result = task_top_sources(catalog, task_id, limit)
    rows = [(rank, score, seen, title, location_of(url), query_id)
            for rank, score, seen, query_id, title, url in result.rows]
    render_table(QueryResult(["rank", "score", "seen", "title", "source", "query"], rows),
                 title=f"top sources of {task_id}")
