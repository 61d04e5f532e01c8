"""The pages of `searchlake serve`: ask, watch, read.

    GET  /                              question box, runs and answers
    GET  /fragments/runs                the runs list alone (the page refreshes it)
    POST /research                      start a research run → its live page
    POST /ask                           one single-shot answer → its task page
    GET  /tasks/{task_id}/live          wait for a started run's events → its timeline
    GET  /tasks/{task_id}/runs/{run_id} a run's live timeline (fed by its event stream)
    GET  /tasks/{task_id}               the report, sources, drops, answers and charts
    GET  /tasks/{task_id}/report.{fmt}  the stored report as a download: md, html or json
    POST /tasks/{task_id}/again         the task's question again as a new task → its live page
    GET  /static/...                    this app's CSS and scripts (htmx vendored)
    POST /api/research                  JSON: start a run for `searchlake research`, answer
                                        {task_id, run_id} once its first event is written
    GET  /login, POST /login            the token, once, for a browser (SEARCHLAKE_SERVE_TOKEN set)

The handlers are routes.py; what a run may be started with (the offered
library folders, the question's limits) is launching.py.

Everything from the lake goes through Jinja2 autoescaping; links are made
only from http(s) URLs; the Content-Security-Policy allows scripts from this
server only, so a source's text cannot run script in the page.
"""

from __future__ import annotations

from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tasks.common.settings import Settings
from tasks.server.web.guards import Access
from tasks.server.web.launching import Launcher, LaunchRefused, LibraryRefused, offered_library
from tasks.server.web.routes import HERE, Pages

__all__ = ["Launcher", "LaunchRefused", "LibraryRefused", "offered_library", "page_routes"]


def page_routes(settings: Settings, launcher: Launcher | None, access: Access,
                fingerprint_salt: str | None = None) -> list:
    pages = Pages(settings, launcher, access, fingerprint_salt)
    routes = [Route("/", pages.home), Route("/fragments/runs", pages.runs_fragment),
              Route("/research", pages.start_research, methods=["POST"]),
              Route("/ask", pages.start_ask, methods=["POST"]),
              Route("/tasks/{task_id}/live", pages.live), Route("/tasks/{task_id}/runs/{run_id}", pages.timeline),
              Route("/tasks/{task_id}", pages.task), Route("/tasks/{task_id}/report.{fmt}", pages.report_file),
              Route("/tasks/{task_id}/again", pages.research_again, methods=["POST"]),
              Route("/api/research", pages.api_research, methods=["POST"]),
              Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]
    if access.needs_token:
        routes += [Route("/login", pages.login_form), Route("/login", pages.login, methods=["POST"])]
    return routes
