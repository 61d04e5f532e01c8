"""The terminal view of a research run: a live progress bar."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from flows.observer import DETAILS_ONLY


class TerminalObserver:
    def __init__(self, console: Console, details: bool = False):
        self.console = console
        self.details = details
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False)
        self.bar = None
        self.rounds = 0

    def __enter__(self) -> "TerminalObserver":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def plan(self, lines: list[str]) -> None:
        for line in lines:
            if self.details or not line.startswith(DETAILS_ONLY):
                self.note(line)

    def step(self, step: str, label: str) -> None:
        self.console.print(f"[bold]·[/bold] {label}")

    def searches_planned(self, total: int) -> None:
        """A bar per round of searches: a run that searches again (deeper, or
        with a fallback) draws a second one, named so."""
        self.rounds += 1
        name = "searches" if self.rounds == 1 else f"searches, round {self.rounds}"
        self.bar = self.progress.add_task(name, total=total)

    def search_done(self, provider: str, query_id: str, items: int, failed: bool) -> None:
        if failed:
            self.console.print(f"  [yellow]{query_id}: {provider} failed (recorded in the error log)[/yellow]")
        if self.bar is not None and not self.progress.tasks[self.bar].finished:
            self.progress.advance(self.bar)

    def note(self, message: str) -> None:
        self.console.print(message)
