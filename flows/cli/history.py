"""`searchlake history`: the lake's commits, newest first, as a person reads them."""

from __future__ import annotations

import textwrap
from typing import Annotated

import typer

from flows.cli.common import TaskIdOpt, UserError, app, out, settings
from tasks.common.text import printable

WIDTH = 80
INDENT = " " * 7


@app.command()
def history(task_id: TaskIdOpt = None,
            limit: Annotated[int, typer.Option(min=1, help="How many commits")] = 20) -> None:
    """List the lake's commits (snapshots), newest first: when, who, what they did, which tables they changed."""
    from tasks.lake.catalog import open_catalog
    from tasks.lake.history import lake_history, task_is_known
    with open_catalog(settings(), "history", read_only=True) as catalog:
        entries = lake_history(catalog, task_id, limit)
        if task_id and not entries and not task_is_known(catalog, task_id):
            raise UserError(f"unknown task {task_id!r}: no bundle, run or commit of the lake names it "
                            "(see: searchlake history)")
    if not entries:
        out.print(f"no commit names task {task_id} (commits of earlier searchlake versions name none)"
                  if task_id else "no commits yet", markup=False, highlight=False)
    for number, entry in enumerate(entries):
        lines = snapshot_lines(entry, min(out.width, WIDTH))
        for line in lines if number == 0 else ["", *lines]:
            out.print(line, markup=False, highlight=False)


def snapshot_lines(entry, width: int) -> list[str]:
    """One commit: its id, time and author, then what it says it did, then
    what it changed, each wrapped to `width` under the first line's text."""
    head = f"{entry.snapshot_id:>5}  {entry.time:%Y-%m-%d %H:%M:%S %Z}  {printable(entry.author or '(no author)')}"
    body = [printable(entry.message or "(no message)")]
    body += ["; ".join(f"{verb} {', '.join(names)}" for verb, names in entry.changes.items())] if entry.changes else []
    lines = textwrap.wrap(head, width, subsequent_indent=INDENT)
    for text in body:
        lines += textwrap.wrap(text, width, initial_indent=INDENT, subsequent_indent=INDENT, break_on_hyphens=False)
    return lines
