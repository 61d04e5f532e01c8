"""`searchlake research` through a running `searchlake serve`: the run starts
in that long-lived process (Prefect already imported and reachable), and this
command follows the run's events file — the same lake, so the same disk — to
draw the terminal progress, then prints the summary as a local run does."""

from __future__ import annotations

import time

from flows.cli.common import UserError, err
from schemas.request import ResearchRequest
from tasks.common.settings import Settings

HANDOFF_TIMEOUT = 300.0  # s for the server to start the run (Prefect may be starting there)


def hand_off(config: Settings, request: ResearchRequest) -> str | None:
    """The trace id of a run started in a server of this home and these
    settings (started now when there is none, see flows/cli/autoserve.py);
    None when the run is to run here."""
    from flows.cli.autoserve import server_for
    from tasks.progress.handoff import fingerprint
    record = server_for(config)
    if record is None:
        return None
    import httpx
    from schemas.serve import HandoffRequest
    body = HandoffRequest(**request.model_dump(), fingerprint=fingerprint(config))
    try:
        response = httpx.post(f"{record.url}/api/research", content=body.model_dump_json(),
                              headers={"content-type": "application/json", **record.headers},
                              timeout=httpx.Timeout(HANDOFF_TIMEOUT, connect=2.0))
    except httpx.HTTPError:
        return None  # not answering: run here
    if response.status_code == 409:
        err.print(f"the searchlake serve at {record.url} runs with other settings: running here",
                  markup=False, highlight=False)
        return None
    if response.status_code in (404, 405):
        return None  # an older or a read-only server: run here
    if response.status_code != 200:
        raise UserError(_refusal(response, record.url))
    doc = response.json()
    err.print(f"running in searchlake serve at {record.url} (watch it at {record.url}/tasks/{doc['task_id']}/runs/"
              f"{doc['run_id']})", markup=False, highlight=False)
    follow_in_terminal(config, doc["task_id"], doc["run_id"], record.pid)
    return doc["run_id"]


def _refusal(response, url: str) -> str:
    """Why the server refused the run: its one-line error, whatever the body."""
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return f"the searchlake serve at {url} refused the run (HTTP {response.status_code})"


def follow_in_terminal(config: Settings, task_id: str, run_id: str, server_pid: int) -> None:
    """Draw the run's events as the local terminal view does, until its last
    event (or until the server running it is gone)."""
    from flows.cli.console import TerminalObserver
    from tasks.common.processes import alive
    from tasks.lake.files import run_logs_root
    from tasks.progress.events import events_path, parse_line
    path = events_path(run_logs_root(config), task_id, run_id)
    with TerminalObserver(err) as watch, open(path, encoding="utf-8") as handle:
        planned = False
        pending = ""
        while True:
            chunk = handle.readline()
            if not chunk:
                if not alive(server_pid):
                    raise UserError(f"the searchlake serve process running {task_id} stopped; "
                                    f"run again with --task-id {task_id} to resume")
                time.sleep(0.05)
                continue
            pending += chunk
            if not pending.endswith("\n"):
                continue
            event, pending = parse_line(pending), ""
            if event is None:
                continue
            metadata = event.payload.metadata or {}
            if event.is_terminal:
                return
            if event.step_type == "pipeline":
                for line in metadata.get("plan", []):
                    watch.note(line)
            elif "gate" in metadata:
                if metadata["outcome"] != "pass":
                    watch.note(f"gate {metadata['gate']}: {metadata['outcome']} — {metadata['reason']}")
            elif event.status == "start":
                watch.step(event.step_type, event.label)
                planned = False  # a deeper or fallback search draws a bar of its own
            elif "provider" in metadata and "total" in metadata:
                if not planned:
                    watch.searches_planned(metadata["total"])
                    planned = True
                watch.search_done(metadata["provider"], metadata["query_id"], metadata["items"], metadata["failed"])
