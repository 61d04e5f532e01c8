"""The pages of `searchlake serve`: ask, watch, read.

    GET  /                              question box, runs and answers
    GET  /fragments/runs                the runs list alone (the page refreshes it)
    POST /research                      start a research run → its live page
    POST /ask                           one single-shot answer → its task page
    GET  /tasks/{task_id}/live          wait for a started run's events → its timeline
    GET  /tasks/{task_id}/runs/{run_id} a run's live timeline (fed by its event stream)
    GET  /tasks/{task_id}               the report, sources, drops, answers and charts
    GET  /static/...                    this app's CSS and scripts (htmx vendored)
    POST /api/research                  JSON: start a run for `searchlake research`, answer
                                        {task_id, run_id} once its first event is written
    GET  /login, POST /login            the token, once, for a browser (SEARCHLAKE_SERVE_TOKEN set)

A research run searches the default library or a folder the server offers
(SEARCHLAKE_LIBRARY, SEARCHLAKE_SERVE_LIBRARIES), never another folder the
server could read; only the server's own user names any folder (see
tasks/progress/web/guards.py, Access).

Everything from the lake goes through Jinja2 autoescaping; links are made
only from http(s) URLs; the Content-Security-Policy allows scripts from this
server only, so a source's text cannot run script in the page.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from schemas.bundle import check_identifier
from schemas.serve import ResearchRequest, is_malformed, request_error
from tasks.common.settings import Settings
from tasks.lake.files import run_logs_root
from tasks.progress.events import list_runs, runs_of_task
from tasks.progress.handoff import fingerprint
from tasks.progress.web.guards import SESSION_COOKIE, Access
from tasks.progress.web.pages import UnknownTaskPage, home_page, task_page
from tasks.common.errors import TransientError, UserError

HERE = Path(__file__).resolve().parent
MAX_QUESTION = 2000


class LaunchRefused(UserError, ValueError):
    """The form asked for something that cannot start (one line for the page)."""


class LibraryRefused(LaunchRefused):
    """A library folder this server does not offer."""


class Launcher(Protocol):
    """Starts work for the page; lives with the flows (it runs them)."""

    def providers(self) -> list[str]: ...
    def can_ask(self) -> bool: ...
    def research(self, question: str, providers: list[str] | None, library: str | None, target: int | None,
                 task_id: str | None = None, max_results: int | None = None, demand_id: str = "default",
                 budget: dict | None = None) -> str: ...
    def ask(self, question: str) -> str: ...
    def launch_error(self, task_id: str) -> str | None: ...


# -- templates ------------------------------------------------------------------

def _href(url: str | None) -> str | None:
    """A link target only for http(s) URLs: anything else is shown as text."""
    if not url:
        return None
    return url if urlsplit(url.strip()).scheme.lower() in ("http", "https") else None


def _domain(url: str | None) -> str:
    host = urlsplit(url or "").hostname or ""
    return host.removeprefix("www.") or "local"


def _templates() -> Jinja2Templates:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters.update(href=_href, domain=_domain,
                       score=lambda v: "–" if v is None else f"{v:.2f}",
                       seconds=lambda v: "–" if v is None else f"{v:.1f} s")
    return Jinja2Templates(env=env)


# -- routes ---------------------------------------------------------------------

def page_routes(settings: Settings, launcher: Launcher | None, access: Access) -> list:
    templates = _templates()
    root = run_logs_root(settings)
    own_fingerprint = fingerprint(settings)
    libraries = [str(folder) for folder in _offered_libraries(settings)]

    def render(request: Request, name: str, status_code: int = 200, **context) -> Response:
        context.update(can_research=launcher is not None,
                       can_ask=launcher is not None and launcher.can_ask(),
                       providers=launcher.providers() if launcher else [], libraries=libraries)
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    def busy(request: Request, exc: TransientError) -> Response:
        return render(request, "message.html", 503, title="The lake is busy", message=str(exc.args[0]),
                      refresh=True)

    def home(request: Request, error: str | None = None, status_code: int = 200, form: dict | None = None):
        try:
            page = home_page(settings)
        except TransientError as exc:
            return busy(request, exc)
        return render(request, "home.html", status_code, page=page, error=error, form=form or {})

    def runs_fragment(request: Request) -> Response:
        try:
            page = home_page(settings)
        except TransientError:
            return PlainTextResponse("", status_code=204)  # keep what the page shows
        return render(request, "runs_fragment.html", page=page)

    async def start_research(request: Request) -> Response:
        if launcher is None:
            return PlainTextResponse("this server only reads", status_code=405)
        form = await request.form()
        values = {k: str(form.get(k, "")).strip() for k in ("question", "library", "target")}
        chosen = [str(p) for p in form.getlist("providers")]
        try:
            task_id = await run_in_threadpool(_launch_research, launcher, settings, values, chosen)
        except LaunchRefused as exc:
            return home(request, error=str(exc), status_code=400, form={**values, "providers": chosen})
        return RedirectResponse(f"/tasks/{task_id}/live", status_code=303)

    async def start_ask(request: Request) -> Response:
        if launcher is None or not launcher.can_ask():
            return PlainTextResponse("ask needs OPENROUTER_API_KEY", status_code=405)
        form = await request.form()
        question = str(form.get("question", "")).strip()
        try:
            if not question or len(question) > MAX_QUESTION:
                raise LaunchRefused(f"the question must have 1 to {MAX_QUESTION} characters")
            task_id = await run_in_threadpool(launcher.ask, question)
        except LaunchRefused as exc:
            return home(request, error=str(exc), status_code=400, form={"ask_question": question})
        return RedirectResponse(f"/tasks/{task_id}", status_code=303)

    def live(request: Request) -> Response:
        task_id = _task_id(request)
        found = [r for r in list_runs(root) if r.task_id == task_id]
        if found:
            return RedirectResponse(f"/tasks/{task_id}/runs/{found[0].run_id}", status_code=303)
        error = launcher.launch_error(task_id) if launcher else None
        return render(request, "starting.html", 500 if error else 200, task_id=task_id, error=error,
                      refresh=not error)

    def timeline(request: Request) -> Response:
        task_id, run_id = _task_id(request), request.path_params["run_id"]
        try:
            check_identifier(run_id)
        except ValueError as exc:
            raise HTTPException(400, f"invalid run id: {exc}") from None
        return render(request, "run.html", task_id=task_id, run_id=run_id)

    async def api_research(request: Request) -> Response:
        if launcher is None:
            return JSONResponse({"error": "this server only reads"}, status_code=405)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send JSON"}, status_code=415)
        try:
            body = ResearchRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            return JSONResponse({"error": request_error(exc)}, status_code=400 if is_malformed(exc) else 422)
        if body.fingerprint != own_fingerprint:
            return JSONResponse({"error": "this server runs with other settings"}, status_code=409)
        before = set(runs_of_task(root, body.task_id)) if body.task_id else set()
        try:
            library = body.library if access.is_owner(request.headers) else offered_library(settings, body.library)
            task_id = await run_in_threadpool(
                launcher.research, body.question, body.providers, library, body.target, task_id=body.task_id,
                max_results=body.max_results, demand_id=body.demand_id,
                budget=body.budget.model_dump(exclude_none=True) if body.budget else None)
        except LibraryRefused as exc:
            return JSONResponse({"error": str(exc)}, status_code=403)
        except LaunchRefused as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
        while True:  # until the run wrote its first event, or could not start
            new = set(runs_of_task(root, task_id)) - before
            if new:
                return JSONResponse({"task_id": task_id, "run_id": new.pop()})
            error = launcher.launch_error(task_id)
            if error:
                return JSONResponse({"task_id": task_id, "error": error}, status_code=503)
            await asyncio.sleep(0.05)

    def task(request: Request) -> Response:
        task_id = _task_id(request)
        try:
            page = task_page(settings, task_id)
        except UnknownTaskPage:
            return render(request, "message.html", 404, title="Unknown task",
                          message=f"nothing in the lake names task {task_id}")
        except TransientError as exc:
            return busy(request, exc)
        return render(request, "task.html", page=page)

    def login_form(request: Request) -> Response:
        return render(request, "login.html", next=_local_path(request.query_params.get("next")))

    async def login(request: Request) -> Response:
        form = await request.form()
        wanted = _local_path(str(form.get("next", "")))
        if not access.opens_with(str(form.get("token", ""))):
            return render(request, "login.html", 401, next=wanted, error="that is not this server's token")
        response = RedirectResponse(wanted, status_code=303)
        response.set_cookie(SESSION_COOKIE, access.session, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        return response

    routes = [Route("/", home), Route("/fragments/runs", runs_fragment),
              Route("/research", start_research, methods=["POST"]), Route("/ask", start_ask, methods=["POST"]),
              Route("/tasks/{task_id}/live", live), Route("/tasks/{task_id}/runs/{run_id}", timeline),
              Route("/tasks/{task_id}", task), Route("/api/research", api_research, methods=["POST"]),
              Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]
    if access.needs_token:
        routes += [Route("/login", login_form), Route("/login", login, methods=["POST"])]
    return routes


def _local_path(wanted: str | None) -> str:
    """Where the login form sends the browser next: a path of this server, never another site."""
    if not wanted or not wanted.startswith("/") or wanted.startswith(("//", "/\\")):
        return "/"
    return wanted


def _task_id(request: Request) -> str:
    task_id = request.path_params["task_id"]
    try:
        return check_identifier(task_id)
    except ValueError as exc:
        raise HTTPException(400, f"invalid task id: {exc}") from None


def offered_library(settings: Settings, asked: str | None) -> str | None:
    """The library folder a request asked for, when this server offers it:
    none (the default library), SEARCHLAKE_LIBRARY or one of
    SEARCHLAKE_SERVE_LIBRARIES. Folders are compared resolved, so neither a
    link nor '..' leads anywhere else."""
    if not asked:
        return None
    folder = _resolved(asked)
    if folder is None or folder not in _offered_libraries(settings):
        raise LibraryRefused(f"library folder {asked!r} is not a library this server offers "
                             "(SEARCHLAKE_LIBRARY and SEARCHLAKE_SERVE_LIBRARIES name them)")
    return str(folder)


def _offered_libraries(settings: Settings) -> list[Path]:
    folders = [_resolved(str(folder)) for folder in (settings.library, *settings.serve_libraries) if folder]
    return list(dict.fromkeys(folder for folder in folders if folder is not None))


def _resolved(folder: str) -> Path | None:
    try:
        return Path(folder).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL byte: no folder at all
        return None


def _launch_research(launcher: Launcher, settings: Settings, values: dict, providers: list[str]) -> str:
    question = values["question"]
    if not question or len(question) > MAX_QUESTION:
        raise LaunchRefused(f"the question must have 1 to {MAX_QUESTION} characters")
    target = None
    if values["target"]:
        if not values["target"].isdigit() or int(values["target"]) < 1:
            raise LaunchRefused(f"target must be a whole number of sources, at least 1, not {values['target']!r}")
        target = int(values["target"])
    return launcher.research(question, providers or None, offered_library(settings, values["library"]), target)
