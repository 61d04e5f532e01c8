"""Loading a published report back from the lake (docs/reports.md).

Kept apart from tasks.reporting.report, which publishes reports: that module
imports synthesis and modeling (numpy, the word lists, the term index), a
second or so of imports that `searchlake report` and the answer a research
command prints do not need.
"""

from __future__ import annotations

from tasks.lake.catalog import Catalog
from tasks.lake.consolidation import UnknownTask
from tasks.lake.sqlfiles import records

__all__ = ["FORMATS", "ReportNotFound", "load_report"]

FORMATS = {"md": "report.md", "html": "report.html", "json": "report.json"}


class ReportNotFound(UnknownTask):
    """No report has been published for the task. (An UnknownTask, so the
    CLI's existing handler prints it as a one-line error.)"""


def load_report(catalog: Catalog, task_id: str, fmt: str = "md") -> str:
    """The text of a task's published report in `fmt` (md, html or json)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}: use md, html or json")
    rows = records(catalog.run("report_paths", [task_id]))
    if not rows:
        raise ReportNotFound(f"no report has been published for task {task_id!r}")
    key = rows[0][f"{fmt}_path"]
    return catalog.lake.read_bytes(key).decode("utf-8")
