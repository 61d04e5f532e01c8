"""Starts research runs and single-shot answers for the web page, for
`searchlake research` when it hands its run to a running `searchlake serve`,
and for the `research` tool of the Model Context Protocol (`searchlake mcp`,
/mcp of `serve`: flows/mcp_research.py).

A research run is the same Prefect flow the command line runs, called in a
thread of this long-lived process: Prefect and the rest are imported once,
and the Prefect API (PREFECT_API_URL, or the temporary server Prefect starts
for this process) is reached once, not once per run."""

from __future__ import annotations

import threading
import time

from flows.research_checks import ResearchRefused, check_request
from schemas.request import ResearchRequest
from tasks.common.settings import Settings
from tasks.lake.files import run_logs_root
from tasks.server.events import runs_of_task
from tasks.server.web.app import LaunchRefused


class ResearchLauncher:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._errors: dict[str, str] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._last_run_ended = time.monotonic()
        # Prefect's temporary server is a per-process singleton that two
        # threads must not start at once: runs wait for the warm-up to end.
        self._api_ready = threading.Event()
        self._api_ready.set()
        self._read_ahead = None

    # -- what the page offers
    def providers(self) -> list[str]:
        from tasks.retrieval.providers.registry import PROVIDER_NAMES
        return list(PROVIDER_NAMES)

    def can_ask(self) -> bool:
        return self.settings.openrouter_api_key is not None

    # -- research
    def research(self, request: ResearchRequest) -> str:
        """Check the request, start the run in a thread, return its task id."""
        from flows.research import new_task_id
        try:
            request = check_request(request)
        except ResearchRefused as exc:
            raise LaunchRefused(str(exc)) from None
        if request.task_id is None:
            request = request.model_copy(update={"task_id": new_task_id(request.question)})
        task_id = request.task_id
        with self._lock:
            running = self._threads.get(task_id)
            if running is not None and running.is_alive():
                raise LaunchRefused(f"task {task_id} is already running")
            thread = threading.Thread(target=self._run, args=(request,), name=f"research {task_id}", daemon=True)
            self._threads[task_id] = thread
            self._errors.pop(task_id, None)
        thread.start()
        return task_id

    def _run(self, request: ResearchRequest) -> None:
        try:
            self._run_flow(request)
        finally:
            self._last_run_ended = time.monotonic()
            self._read_library_ahead(request)

    def _read_library_ahead(self, request: ResearchRequest) -> None:
        """From now on, read the library this run searched while idle."""
        from tasks.common.settings import research_settings
        from tasks.retrieval.providers.registry import enabled_names
        try:
            config = research_settings(request.library, request.providers)
            if "library" in enabled_names(config):
                self._reader().follow(config)
        except Exception:  # settings changed under the server since the run was checked: its next run says so
            pass

    def _reader(self):
        """The library's read-ahead, made on first use: its imports are the
        flow's, which the server's start need not wait for."""
        with self._lock:
            if self._read_ahead is None:
                from tasks.synthesis.read_ahead import ReadAhead
                self._read_ahead = ReadAhead(self.settings.read_ahead_texts, busy=lambda: bool(self._running()))
            return self._read_ahead

    def _run_flow(self, request: ResearchRequest) -> None:
        from flows.prefect_api import PrefectUnavailable, run_flow
        from flows.research import timed_flow
        task_id = request.task_id
        self._api_ready.wait()
        try:
            state = run_flow(timed_flow(request), **request.flow_parameters())
        except PrefectUnavailable as exc:
            self._errors[task_id] = str(exc)
            return
        except Exception as exc:  # the run's own record says what failed once it has started
            state = None
            message = f"{type(exc).__name__}: {exc}".splitlines()[0]
        else:
            message = state.message or "the run failed"
        if (state is None or not state.is_completed()) and not self._has_events(task_id):
            self._errors[task_id] = message

    def _has_events(self, task_id: str) -> bool:
        return bool(runs_of_task(run_logs_root(self.settings), task_id))

    def is_running(self, task_id: str) -> bool:
        """Whether a run of the task started here is still in its thread."""
        with self._lock:
            thread = self._threads.get(task_id)
        return thread is not None and thread.is_alive()

    def _running(self) -> list[threading.Thread]:
        with self._lock:
            return [thread for thread in self._threads.values() if thread.is_alive()]

    def last_run_ended(self) -> float | None:
        """When the last run ended (time.monotonic()), None while one runs."""
        return None if self._running() else self._last_run_ended

    def wait_for_runs(self) -> None:
        """Let the runs in progress end (a run started as the server was stopping)."""
        for thread in self._running():
            thread.join()

    def launch_error(self, task_id: str) -> str | None:
        """Why a run started here ended before writing its first event."""
        return self._errors.get(task_id)

    # -- ask
    def ask(self, question: str) -> str:
        from schemas.ask import AskOptions
        from tasks.ask.single_shot import AskError, ask
        try:
            result = ask(self.settings, question, AskOptions())
        except AskError as exc:
            raise LaunchRefused(str(exc)) from None
        return result.task_id

    def warm_up(self) -> None:
        """Import the flow and reach the Prefect API now, in the background,
        so the first run started here does not wait for them; and from then
        on read the library of the last run ahead while idle
        (tasks/synthesis/read_ahead.py)."""
        def warm() -> None:
            try:
                from flows.prefect_api import PrefectUnavailable, reach_api
                import flows.research  # noqa: F401
                try:
                    reach_api()
                except PrefectUnavailable:
                    pass  # the first run reports it
            finally:
                self._api_ready.set()
            self._reader().start()
        self._api_ready.clear()
        threading.Thread(target=warm, name="prefect warm-up", daemon=True).start()
