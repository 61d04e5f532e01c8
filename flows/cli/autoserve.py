"""Finding — or starting — the `searchlake serve` a `research` command hands
its run to, the way build tools keep a daemon: the first command of some
settings starts a server of those settings in the background (its own
session, 127.0.0.1, a free port, output appended to `<home>/serve.log`),
later commands of the same settings find it through its record
(`<home>/serve-<pid>.json`, tasks/server/handoff.py), and the server stops
by itself once it has had nothing to do for SEARCHLAKE_SERVE_IDLE_MINUTES.
Commands of other settings get a server of their own, beside it; none runs
in a server of other settings. SEARCHLAKE_AUTOSERVE=false turns the starting
off. A file lock makes commands started together start one server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from flows.cli.common import err
from tasks.common.settings import Settings
from tasks.server.handoff import ServeRecord

LOG = "serve.log"
LOCK = "serve.lock"
READY_TIMEOUT = 60.0  # s for a started server to answer (imports on a loaded machine)
HEALTH_TIMEOUT = 10.0


def declare_run_settings() -> None:
    """Load the providers' own settings (their keys and URLs), so that a
    fingerprint of the settings covers them: a server and a command compare
    the same values."""
    import tasks.retrieval.providers.registry  # noqa: F401  (declares each provider's settings section)


def server_for(config: Settings) -> ServeRecord | None:
    """The server of this home and these settings to run in: a running one,
    else (unless turned off) one started now; None means run here."""
    declare_run_settings()
    running = ServeRecord.running(config)
    if record := _serving(running, config):
        return record
    if config.autoserve:
        return start_server(config)
    if running:
        say(f"the searchlake serve at {running[0].url} runs with other settings: running here")
    return None


def _serving(records: list[ServeRecord], config: Settings) -> ServeRecord | None:
    """The first of `records` whose server runs with these settings and answers."""
    return next((record for record in records if record.serves(config) and answers(record)), None)


def answers(record: ServeRecord) -> bool:
    import httpx
    try:
        return httpx.get(f"{record.url}/health", headers=record.headers, timeout=HEALTH_TIMEOUT).status_code == 200
    except httpx.HTTPError:
        return False


def start_server(config: Settings) -> ServeRecord | None:
    """A server of these settings, started in the background unless another
    command started one meanwhile; None (said in one line) when none is up in time."""
    from filelock import FileLock, Timeout
    try:
        with FileLock(Path(config.home) / LOCK, timeout=READY_TIMEOUT + 30):
            if record := _serving(ServeRecord.running(config), config):
                return record
            return _spawn(config)
    except Timeout:
        say("another searchlake command is still starting searchlake serve: running here")
        return None


def _spawn(config: Settings) -> ServeRecord | None:
    log = Path(config.home) / LOG
    command = [sys.executable, "-m", "flows.cli", "serve", "--host", "127.0.0.1", "--port", "0",
               "--idle-minutes", f"{config.serve_idle_minutes:g}"]
    with open(log, "ab") as output:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # outlives this command, apart from its terminal
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            say(f"searchlake serve did not start (see {log}): running here")
            return None
        record = ServeRecord.of(config, process.pid)
        if record is not None and answers(record):
            say(f"started a background searchlake serve at {record.url} (pid {record.pid}, log {log}); it stops "
                f"after {config.serve_idle_minutes:g} min idle (to run without one: SEARCHLAKE_AUTOSERVE=false)")
            return record
        time.sleep(0.1)
    _stop(process)
    say(f"searchlake serve did not answer within {READY_TIMEOUT:.0f} s (see {log}): running here")
    return None


def _stop(process: subprocess.Popen) -> None:
    """Stop a server that did not come up, and whatever it started."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def say(line: str) -> None:
    err.print(line, markup=False, highlight=False)
