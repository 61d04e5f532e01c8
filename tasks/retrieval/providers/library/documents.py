"""Documents as text: walk a folder (or Python's own docs) and cut each
file's text (extracted by extraction.py) into passages. Nothing here
touches the catalog; tasks/retrieval/providers/library/index.py indexes what this produces.

A *corpus* is one source of documents:
- a folder of the user's documents (`settings.library`): Markdown (.md,
  .markdown), text (.txt, .rst), HTML (.html, .htm), and PDF when the optional
  `pypdf` package is installed. Hidden files and folders are not walked,
  nor SKIPPED_DIRS (documentation build artefacts such as Sphinx's
  `_sources` and `_static`);
  files of other types are ignored. Document URLs are `file://` URLs.
- with no folder configured, Python's language reference as shipped with
  every CPython (`pydoc_data.topics`): one document per topic, with its
  docs.python.org URL (see PYDOC_PAGES) — offline, nothing to download.

Files that cannot be read or have no text become `Skip`s (path, reason) from
the walk, or `SkipFile` from `read` or `extract`, for the caller's error log.
So do files whose name is not valid UTF-8 and, when read, links leading out
of the folder, files that are not regular (FIFO, socket, device) and files
over MAX_FILE_BYTES: `read` opens the file once, below the folder, without
following a link out of it or waiting on a FIFO (tasks/common/untrusted_files.py).

Passages: paragraphs (blank-line separated) packed into spans of at most
PASSAGE_CHARS characters (about 250 English words); longer paragraphs are
cut at sentence ends, else at spaces. A hit's snippet is its best passage.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote_from_bytes

from tasks.common.settings import Settings
from tasks.common.untrusted_files import FileRefused, is_utf8_name, printable_path, read_file_inside
from tasks.retrieval.providers.library.extraction import SkipFile

SUFFIX_KINDS = {
    ".md": "markdown", ".markdown": "markdown",
    ".txt": "text", ".rst": "rst",
    ".html": "html", ".htm": "html",
    ".pdf": "pdf",
}
# Build artefacts of documentation generators: Sphinx's copies of the page
# sources and its highlighted module code would double every page.
SKIPPED_DIRS = frozenset({"_sources", "_static", "_images", "_downloads", "_modules", "node_modules", "__pycache__"})
MAX_FILE_BYTES = 50_000_000  # larger files are skipped: not "documents" one reads
PASSAGE_CHARS = 1500


@dataclass(frozen=True)
class Skip:
    """A file that was not indexed, and why (one line, for the error log)."""

    path: str
    reason: str


@dataclass(frozen=True)
class DocumentFile:
    """A file (or topic) that may be indexed; `read` fetches its bytes, or
    raises SkipFile (what it opened may not be read) or OSError. Its URL is
    worked out only for a file that is read: a re-index stats every file."""

    path: str
    kind: str
    mtime: float
    size: int
    read: Callable[[], bytes]
    locate: Callable[[], str]

    @property
    def url(self) -> str:
        return self.locate()


@dataclass(frozen=True)
class Document:
    """A file (or topic) as the index stores it."""

    path: str
    url: str
    kind: str
    mtime: float
    size: int
    sha256: str
    title: str
    text: str
    spans: tuple[tuple[int, int], ...]
    passage_terms: tuple[str, ...]  # per passage its terms, space-separated, its title's terms first
    vectors: bytes = b""  # per passage its embedding (float32 × embeddings.DIM), of title and passage


@dataclass(frozen=True)
class Corpus:
    key: str
    root: str
    walk: Callable[[], Iterator[DocumentFile | Skip]]


# -- which corpus -------------------------------------------------------------

def corpus_for(settings: Settings) -> Corpus:
    """The configured folder, or Python's docs when none is configured.
    A configured folder that does not exist is a ValueError."""
    if settings.library is None:
        return pydoc_corpus()
    root = Path(settings.library).expanduser()
    if not root.is_dir():
        raise ValueError(f"library folder {str(root)!r} does not exist or is not a folder")
    root = root.resolve()
    return Corpus(key=f"folder:{root}", root=str(root), walk=lambda: walk_folder(root))


def walk_folder(root: Path) -> Iterator[DocumentFile | Skip]:
    """Every file of a document type below `root`, in the order of their
    paths. Paths are handled as strings: a re-index walks every file."""
    failed_dirs: list[Skip] = []
    base = str(root)

    def on_error(error: OSError) -> None:
        where = Path(error.filename).relative_to(root).as_posix() if error.filename else "."
        failed_dirs.append(Skip(printable_path(where), f"unreadable folder: {error.strerror or error}"))

    for dirpath, dirnames, filenames in os.walk(base, onerror=on_error):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        folder = "" if dirpath == base else os.path.relpath(dirpath, base)  # once per folder
        for name in sorted(filenames):
            kind = SUFFIX_KINDS.get(os.path.splitext(name)[1].lower())
            if name.startswith(".") or kind is None:
                continue
            yield _candidate(root, os.path.join(dirpath, name), f"{folder}/{name}" if folder else name, kind)
    yield from failed_dirs


def _candidate(root: Path, path: str, relative: str, kind: str) -> DocumentFile | Skip:
    if not is_utf8_name(relative):  # the name cannot become a URL, a path column or a log line
        return Skip(printable_path(relative), "file name is not valid UTF-8")
    try:
        info = os.stat(path)  # mtime and size tell the index whether to read it again
    except OSError as error:  # a dangling link, a link loop, a file gone since the walk
        return Skip(relative, f"unreadable: {error.strerror or error}")
    # What is read, and whether it may be, is decided when the file is opened
    # (a link leading out of the library, a FIFO, a file too large: SkipFile),
    # so a file swapped for one of those after this stat is never read.
    return DocumentFile(relative, kind, info.st_mtime, info.st_size, lambda: _read_inside(root, relative),
                        lambda: file_url(path))


def file_url(path: str) -> str:
    """Path(path).as_uri() of an absolute, normalized path, without pathlib's
    parsing (a tenth of the time: a first index of a large folder reads every file)."""
    return "file://" + quote_from_bytes(os.fsencode(path))


def _read_inside(root: Path, relative: str) -> bytes:
    try:
        return read_file_inside(root, relative, max_bytes=MAX_FILE_BYTES)
    except FileRefused as refused:
        raise SkipFile(str(refused)) from None


# -- Python's own documentation -----------------------------------------------

# The docs.python.org page of each pydoc topic. A topic name is a Sphinx label,
# and Sphinx keeps labels as HTML ids, so `<page>.html#<topic>` lands on the
# section; the pages were checked against the Python 3.11 HTML docs. A topic
# not listed here (newer Pythons add some) gets a file: URL of topics.py.
_PAGE_TOPICS = {
    "reference/simple_stmts": "assert assignment augassign break continue del global import nonlocal "
                              "pass raise return yield",
    "reference/compound_stmts": "async class compound else for function if try while with",
    "reference/expressions": "atom-identifiers atom-literals attribute-references await binary bitwise "
                             "booleans calls comparisons conversions dict exprlists in lambda lists "
                             "operator-summary power shifting slicings subscriptions unary",
    "reference/datamodel": "attribute-access callable-types context-managers customization numeric-types "
                           "objects sequence-types specialnames types",
    "reference/executionmodel": "dynamic-features exceptions execmodel naming",
    "reference/lexical_analysis": "floating id-classes identifiers imaginary integers numbers strings",
    "library/stdtypes": "bltin-code-objects bltin-ellipsis-object bltin-null-object bltin-type-objects "
                        "specialattrs string-methods truth typesfunctions typesmapping typesmethods "
                        "typesmodules typesseq typesseq-mutable",
    "library/string": "formatstrings",
    "library/pdb": "debugger",
}
PYDOC_PAGES = {topic: page for page, topics in _PAGE_TOPICS.items() for topic in topics.split()}


def pydoc_url(topic: str, topics_file: Path) -> str:
    """A topic's URL carries `?topic=`: source ids ignore fragments, and each
    topic (a part of a page) must stay its own source."""
    page = PYDOC_PAGES.get(topic)
    if page is None:
        return f"{topics_file.as_uri()}?topic={topic}"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"https://docs.python.org/{version}/{page}.html?topic={topic}#{topic}"


def pydoc_corpus() -> Corpus:
    from pydoc_data import topics as module  # ships with CPython

    topics_file = Path(module.__file__).resolve()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"

    def walk() -> Iterator[DocumentFile]:
        mtime = topics_file.stat().st_mtime
        for topic in sorted(module.topics):
            data = module.topics[topic].encode("utf-8")
            yield DocumentFile(topic, "pydoc", mtime, len(data), lambda data=data: data,
                               lambda topic=topic: pydoc_url(topic, topics_file))

    return Corpus(key=f"pydoc:{version}", root=str(topics_file), walk=walk)


# -- passages -----------------------------------------------------------------

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|(?<=[。！？；])")
_SPACE = re.compile(r"\s+")


def passages(text: str, limit: int = PASSAGE_CHARS) -> list[tuple[int, int]]:
    """(start, end) spans of the text: whole paragraphs packed up to `limit`
    characters; a longer paragraph is cut into pieces first."""
    spans: list[tuple[int, int]] = []
    start = end = None
    for piece_start, piece_end in _pieces(text, limit):
        if start is not None and piece_end - start > limit:
            spans.append((start, end))
            start = None
        if start is None:
            start = piece_start
        end = piece_end
    if start is not None:
        spans.append((start, end))
    return spans


def _pieces(text: str, limit: int) -> Iterator[tuple[int, int]]:
    position = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        yield from _split_long(text, position, match.start(), limit)
        position = match.end()
    yield from _split_long(text, position, len(text), limit)


def _split_long(text: str, start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end - start > limit:
        cut = _cut_point(text, start, start + limit)
        yield start, cut
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        yield start, end


def _cut_point(text: str, low: int, high: int) -> int:
    """Cut at the last sentence end in the window's second half, else at the
    last space there, else hard (a run with no spaces, e.g. CJK or base64)."""
    window = text[low:high]
    for pattern in (_SENTENCE_END, _SPACE):
        cuts = [m.start() for m in pattern.finditer(window) if m.start() > len(window) // 2]
        if cuts:
            return low + cuts[-1]
    return high
