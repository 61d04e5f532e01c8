"""Loading a published report back from the lake (docs/reports.md).

Kept apart from tasks.reporting.report, which publishes reports: that module
imports synthesis and modeling (numpy, the word lists, the term index), a
second or so of imports that `searchlake report` and the answer a research
command prints do not need.
"""

from __future__ import annotations

from tasks.common.untrusted_files import FileRefused
from tasks.lake.catalog import Catalog
from tasks.lake.consolidation import UnknownTask
from tasks.lake.sqlfiles import records

__all__ = ["FORMATS", "ReportNotFound", "ReportUnreadable", "load_report"]

FORMATS = {"md": "report.md", "html": "report.html", "json": "report.json"}
# Far above any report searchlake writes (a few MB at most): a larger file was put there by someone else.
MAX_REPORT_BYTES = 64 * 1024 * 1024


class ReportNotFound(UnknownTask):
    """No report has been published for the task. (An UnknownTask, so the
    CLI's existing handler prints it as a one-line error.)"""


class ReportUnreadable(ReportNotFound):
    """The catalog names a report file that cannot be read back as text:
    gone, a link out of the lake's folder, a FIFO or device, too large, or
    not UTF-8.
    (A ReportNotFound: whoever shows a missing report shows this one too.)"""


def load_report(catalog: Catalog, task_id: str, fmt: str = "md") -> str:
    """The text of a task's published report in `fmt` (md, html or json)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}: use md, html or json")
    rows = records(catalog.run("report_paths", [task_id]))
    if not rows:
        raise ReportNotFound(f"no report has been published for task {task_id!r}")
    try:
        return catalog.lake.read_bytes(rows[0][f"{fmt}_path"], MAX_REPORT_BYTES).decode("utf-8")
    except (FileRefused, OSError, UnicodeDecodeError) as exc:
        raise ReportUnreadable(f"the {fmt} report of task {task_id!r} in the lake cannot be read: "
                               f"{_why_unreadable(exc)}") from None


def _why_unreadable(exc: Exception) -> str:
    """The reason in a few words, naming nothing the file holds."""
    if isinstance(exc, FileRefused):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, FileNotFoundError):
        return "its file is missing"
    return exc.strerror or type(exc).__name__
