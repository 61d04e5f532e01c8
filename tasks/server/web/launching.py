"""What the page may start, and with what: the Launcher the server runs
flows through, the library folders it offers, and the checks a form or a
JSON request passes before anything starts. A research run searches the
default library or a folder the server offers (SEARCHLAKE_LIBRARY,
SEARCHLAKE_SERVE_LIBRARIES), never another folder the server could read;
only the server's own user names any folder (see guards.py, Access)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from schemas.request import MAX_QUESTION, RequestError, ResearchRequest
from schemas.errors import UserError
from tasks.common.settings import Settings


class LaunchRefused(UserError, ValueError):
    """The form asked for something that cannot start (one line for the page)."""


class LibraryRefused(LaunchRefused):
    """A library folder this server does not offer."""


class Launcher(Protocol):
    """Starts work for the page; lives with the flows (it runs them)."""

    def providers(self) -> list[str]: ...
    def can_ask(self) -> bool: ...
    def research(self, request: ResearchRequest) -> str: ...
    def ask(self, question: str) -> str: ...
    def launch_error(self, task_id: str) -> str | None: ...


def checked_question(question: str) -> str:
    if not question or len(question) > MAX_QUESTION:
        raise LaunchRefused(f"the question must have 1 to {MAX_QUESTION} characters")
    return question


def offered_library(settings: Settings, asked: str | None) -> str | None:
    """The library folder a request asked for, when this server offers it:
    none (the default library), SEARCHLAKE_LIBRARY or one of
    SEARCHLAKE_SERVE_LIBRARIES. Folders are compared resolved, so neither a
    link nor '..' leads anywhere else."""
    if not asked:
        return None
    folder = _resolved(asked)
    if folder is None or folder not in offered_libraries(settings):
        offered = ", ".join(choice.label for choice in library_choices(settings))
        raise LibraryRefused(f"library folder {asked!r} is not a library this server offers; it offers "
                             f"{offered}. {HOW_TO_OFFER_A_FOLDER}")
    return str(folder)


# One sentence, on the page under the folder list and in every refusal of a folder.
HOW_TO_OFFER_A_FOLDER = ("To offer another folder, add its path to SEARCHLAKE_SERVE_LIBRARIES "
                         f"('{os.pathsep}' between folders) where `searchlake serve` starts, and start it again.")


PYTHON_DOCUMENTATION = "Python's documentation"  # what the library provider searches with no folder set


@dataclass(frozen=True)
class LibraryChoice:
    value: str  # what the form sends: "" for the default library
    label: str


def library_choices(settings: Settings) -> list[LibraryChoice]:
    """The folders a person may pick, the default library first (named by
    where it is: SEARCHLAKE_LIBRARY, else Python's documentation)."""
    default = _resolved(str(settings.library)) if settings.library else None
    choices = [LibraryChoice("", f"the default library ({default or PYTHON_DOCUMENTATION})")]
    return choices + [LibraryChoice(str(folder), str(folder))
                      for folder in offered_libraries(settings) if folder != default]


def offered_libraries(settings: Settings) -> list[Path]:
    folders = [_resolved(str(folder)) for folder in (settings.library, *settings.serve_libraries) if folder]
    return list(dict.fromkeys(folder for folder in folders if folder is not None))


def _resolved(folder: str) -> Path | None:
    try:
        return Path(folder).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL byte: no folder at all
        return None


def launch_research(launcher: Launcher, settings: Settings, values: dict, providers: list[str]) -> str:
    """Start the research run a page form asked for (its fields as text)."""
    return start_research(launcher, settings, values["question"], providers, _target(values["target"]),
                          values["library"])


def start_research(launcher: Launcher, settings: Settings, question: str, providers: list[str] | None,
                   target: int | None, library: str | None) -> str:
    """Start a research run as a new task, once its question and folder pass."""
    question = checked_question(question)
    try:
        request = ResearchRequest.build(question=question, providers=providers or None, target=target,
                                        library=offered_library(settings, library))
    except RequestError as exc:
        raise LaunchRefused(str(exc)) from None
    return launcher.research(request)


def _target(text: str) -> int | None:
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise LaunchRefused(f"target must be a whole number of sources, at least 1, not {text!r}")
    return int(text)
