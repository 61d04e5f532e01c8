"""The handlers behind the page's routes (the route table is app.py). One
Pages object per server holds what every handler shares: the settings, the
launcher (None: this server only reads), the access rule and the templates.

Everything from the lake goes through Jinja2 autoescaping; links are made
only from http(s) URLs."""

from __future__ import annotations

import asyncio
import hmac
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from schemas.bundle import check_identifier
from schemas.request import request_error
from schemas.serve import HandoffRequest, is_malformed
from schemas.errors import TransientError
from tasks.common.settings import Settings
from tasks.common.text import printable
from tasks.lake.files import run_logs_root
from tasks.server.events import list_runs, runs_of_task
from tasks.server.handoff import fingerprint
from tasks.server.web.guards import SESSION_COOKIE, Access
from tasks.server.web.launching import (
    HOW_TO_OFFER_A_FOLDER,
    Launcher,
    LaunchRefused,
    LibraryRefused,
    checked_question,
    launch_research,
    library_choices,
    offered_library,
    start_research,
)
from tasks.server.web.pages import UnknownTaskPage, asked_before, home_page, stored_report, task_page
from tasks.reporting.report import ReportNotFound

HERE = Path(__file__).resolve().parent
# How long POST /api/research waits for a started run's first event before
# answering 504 (the run goes on); `searchlake research` waits 300 s for the answer.
FIRST_EVENT_DEADLINE = 240.0
FIRST_EVENT_POLL = 0.05
# What a downloaded report is, by the format in its address.
REPORT_TYPES = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8", "json": "application/json"}


# -- templates ------------------------------------------------------------------

def _href(url: str | None) -> str | None:
    """A link target only for http(s) URLs: anything else is shown as text."""
    if not url:
        return None
    return url if urlsplit(url.strip()).scheme.lower() in ("http", "https") else None


def _domain(url: str | None) -> str:
    host = urlsplit(url or "").hostname or ""
    return host.removeprefix("www.") or "local"


def _shown(value):
    """Every value a template prints, as people may be shown it: text from
    the lake without control or bidirectional characters (a title's U+202E
    would reorder the page). What templates built themselves (Markup) is theirs."""
    return printable(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def _templates() -> Jinja2Templates:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), finalize=_shown,
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters.update(href=_href, domain=_domain,
                       score=lambda v: "–" if v is None else f"{v:.2f}",
                       seconds=lambda v: "–" if v is None else f"{v:.1f} s")
    return Jinja2Templates(env=env)


# -- the handlers -----------------------------------------------------------------

class Pages:
    def __init__(self, settings: Settings, launcher: Launcher | None, access: Access,
                 fingerprint_salt: str | None = None):
        self.settings, self.launcher, self.access = settings, launcher, access
        self.templates = _templates()
        self.root = run_logs_root(settings)
        # a command hands its run over only with this server's settings (tasks/server/handoff.py)
        self.own_fingerprint = fingerprint(settings, fingerprint_salt) if fingerprint_salt else None
        self.libraries = library_choices(settings)

    def render(self, request: Request, name: str, status_code: int = 200, **context) -> Response:
        launcher = self.launcher
        context.update(can_research=launcher is not None,
                       can_ask=launcher is not None and launcher.can_ask(),
                       providers=launcher.providers() if launcher else [], libraries=self.libraries,
                       how_to_offer_a_folder=HOW_TO_OFFER_A_FOLDER)
        return self.templates.TemplateResponse(request, name, context, status_code=status_code)

    def busy(self, request: Request, exc: TransientError) -> Response:
        return self.render(request, "message.html", 503, title="The lake is busy", message=str(exc.args[0]),
                           refresh=True)

    def home(self, request: Request, error: str | None = None, status_code: int = 200,
             form: dict | None = None) -> Response:
        try:
            page = home_page(self.settings)
        except TransientError as exc:
            return self.busy(request, exc)
        return self.render(request, "home.html", status_code, page=page, error=error, form=form or {})

    def runs_fragment(self, request: Request) -> Response:
        try:
            page = home_page(self.settings)
        except TransientError:
            return PlainTextResponse("", status_code=204)  # keep what the page shows
        return self.render(request, "runs_fragment.html", page=page)

    async def start_research(self, request: Request) -> Response:
        if self.launcher is None:
            return PlainTextResponse("this server only reads", status_code=405)
        form = await request.form()
        values = {k: str(form.get(k, "")).strip() for k in ("question", "library", "target")}
        chosen = [str(p) for p in form.getlist("providers")]
        try:
            task_id = await run_in_threadpool(launch_research, self.launcher, self.settings, values, chosen)
        except LaunchRefused as exc:
            return self.home(request, error=str(exc), status_code=400, form={**values, "providers": chosen})
        return RedirectResponse(f"/tasks/{task_id}/live", status_code=303)

    async def start_ask(self, request: Request) -> Response:
        if self.launcher is None or not self.launcher.can_ask():
            return PlainTextResponse("ask needs OPENROUTER_API_KEY", status_code=405)
        form = await request.form()
        question = str(form.get("question", "")).strip()
        try:
            task_id = await run_in_threadpool(self.launcher.ask, checked_question(question))
        except LaunchRefused as exc:
            return self.home(request, error=str(exc), status_code=400, form={"ask_question": question})
        return RedirectResponse(f"/tasks/{task_id}", status_code=303)

    def live(self, request: Request) -> Response:
        task_id = _task_id(request)
        found = [r for r in list_runs(self.root) if r.task_id == task_id]
        if found:
            return RedirectResponse(f"/tasks/{task_id}/runs/{found[0].run_id}", status_code=303)
        error = self.launcher.launch_error(task_id) if self.launcher else None
        return self.render(request, "starting.html", 500 if error else 200, task_id=task_id, error=error,
                           refresh=not error)

    def timeline(self, request: Request) -> Response:
        task_id, run_id = _task_id(request), request.path_params["run_id"]
        try:
            check_identifier(run_id)
        except ValueError as exc:
            raise HTTPException(400, f"invalid run id: {exc}") from None
        return self.render(request, "run.html", task_id=task_id, run_id=run_id)

    async def api_research(self, request: Request) -> Response:
        if self.launcher is None:
            return JSONResponse({"error": "this server only reads"}, status_code=405)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send JSON"}, status_code=415)
        try:
            body = HandoffRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            return JSONResponse({"error": request_error(exc)}, status_code=400 if is_malformed(exc) else 422)
        if not self._runs_with_settings_of(body.fingerprint):
            return JSONResponse({"error": "this server runs with other settings"}, status_code=409)
        before = set(runs_of_task(self.root, body.task_id)) if body.task_id else set()
        try:
            task_id = await self._start_requested(request, body)
        except LibraryRefused as exc:
            return JSONResponse({"error": str(exc)}, status_code=403)
        except LaunchRefused as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
        return await self._first_run(task_id, before)

    def _runs_with_settings_of(self, caller_fingerprint: str) -> bool:
        return self.own_fingerprint is not None and hmac.compare_digest(caller_fingerprint.encode(),
                                                                        self.own_fingerprint.encode())

    async def _start_requested(self, request: Request, body: HandoffRequest) -> str:
        library = (body.library if self.access.is_owner(request.headers)
                   else offered_library(self.settings, body.library))
        return await run_in_threadpool(self.launcher.research, body.request().model_copy(update={"library": library}))

    async def _first_run(self, task_id: str, before: set[str]) -> Response:
        """The run id once the started run wrote its first event; its error
        if it could not start; 504 if neither happened by the deadline."""
        deadline = time.monotonic() + FIRST_EVENT_DEADLINE
        while time.monotonic() < deadline:
            new = set(runs_of_task(self.root, task_id)) - before
            if new:
                return JSONResponse({"task_id": task_id, "run_id": new.pop()})
            error = self.launcher.launch_error(task_id)
            if error:
                return JSONResponse({"task_id": task_id, "error": error}, status_code=503)
            await asyncio.sleep(FIRST_EVENT_POLL)
        return JSONResponse({"task_id": task_id, "error": f"the run of task {task_id} wrote no event within "
                             f"{FIRST_EVENT_DEADLINE:.0f} s; it may still start: see /tasks/{task_id}/live"},
                            status_code=504)

    def task(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        task_id = _task_id(request)
        try:
            page = task_page(self.settings, task_id)
        except UnknownTaskPage:
            return self.unknown_task(request, task_id)
        except TransientError as exc:
            return self.busy(request, exc)
        return self.render(request, "task.html", status_code, page=page, error=error)

    def unknown_task(self, request: Request, task_id: str) -> Response:
        return self.render(request, "message.html", 404, title="Unknown task", message=_unknown(task_id))

    def report_file(self, request: Request) -> Response:
        """The task's stored report as a download (md, html or json)."""
        task_id, fmt = _task_id(request), request.path_params["fmt"]
        if fmt not in REPORT_TYPES:
            return PlainTextResponse(f"no report format {fmt!r}: use md, html or json", status_code=404)
        try:
            text = stored_report(self.settings, task_id, fmt)
        except UnknownTaskPage:
            return PlainTextResponse(_unknown(task_id), status_code=404)
        except ReportNotFound as exc:
            return PlainTextResponse(str(exc), status_code=404)
        except TransientError as exc:
            return PlainTextResponse(str(exc.args[0]), status_code=503)
        return Response(text, media_type=REPORT_TYPES[fmt],
                        headers={"content-disposition": _attachment(f"{task_id}.{fmt}")})

    async def research_again(self, request: Request) -> Response:
        """The task's question again, with its latest run's folder, providers
        and target, as a new task: resuming this one would search nothing new."""
        if self.launcher is None:
            return PlainTextResponse("this server only reads", status_code=405)
        task_id = _task_id(request)
        try:
            asked = await run_in_threadpool(asked_before, self.settings, task_id)
            new_task = await run_in_threadpool(start_research, self.launcher, self.settings, asked.question,
                                               asked.providers, asked.target, asked.library)
        except UnknownTaskPage:
            return self.unknown_task(request, task_id)
        except TransientError as exc:
            return self.busy(request, exc)
        except LaunchRefused as exc:
            return self.task(request, error=str(exc), status_code=400)
        return RedirectResponse(f"/tasks/{new_task}/live", status_code=303)

    def login_form(self, request: Request) -> Response:
        return self.render(request, "login.html", next=_local_path(request.query_params.get("next")))

    async def login(self, request: Request) -> Response:
        form = await request.form()
        wanted = _local_path(str(form.get("next", "")))
        if not self.access.opens_with(str(form.get("token", ""))):
            return self.render(request, "login.html", 401, next=wanted, error="that is not this server's token")
        response = RedirectResponse(wanted, status_code=303)
        response.set_cookie(SESSION_COOKIE, self.access.session, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        return response


def _local_path(wanted: str | None) -> str:
    """Where the login form sends the browser next: a path of this server, never another site."""
    if not wanted or not wanted.startswith("/") or wanted.startswith(("//", "/\\")):
        return "/"
    return wanted


def _unknown(task_id: str) -> str:
    return f"nothing in the lake names task {task_id}"


def _attachment(filename: str) -> str:
    """A Content-Disposition that downloads under `filename`: its UTF-8 form
    (RFC 5987, a task id may be Chinese) and an ASCII one for clients that
    read only `filename`."""
    fallback = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


def _task_id(request: Request) -> str:
    task_id = request.path_params["task_id"]
    try:
        return check_identifier(task_id)
    except ValueError as exc:
        raise HTTPException(400, f"invalid task id: {exc}") from None
