"""What every flow shares: Prefect's defaults for this project, how its
logs tell a user's error from a crash, and the retry rule."""

from __future__ import annotations

import logging
import os

FLOW_HEARTBEAT_SECONDS = 30  # Prefect's minimum; automations/zombie-flow-runs.yaml allows four of them


def use_prefect_defaults() -> None:
    """Settings Prefect must see before it is imported; a value already in
    the environment wins. flows/__init__.py calls this, so every flow module
    and the command line start with them."""
    # Prefect's telemetry cannot reach out from here and would log an error.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Prefect's temporary server gives up after 20 s; on a busy machine it needs
    # longer (seen: 25 s), and waiting beats failing the run.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    # A flow run tells Prefect it is alive this often (Prefect's default: 180
    # s), so that automations/zombie-flow-runs.yaml, which crashes searchlake
    # flow runs silent for 120 s, never takes one of ours for dead. The
    # deployments' runs get it from prefect.yaml: Prefect is imported there
    # before this runs.
    if not {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY"} & set(os.environ):
        os.environ["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] = str(FLOW_HEARTBEAT_SECONDS)


class UserErrorsAreNoCrash(logging.Filter):
    """A flow run that ends on a user's error (a gate that stopped a run, an
    ingest that refused files: searchlake's UserError, whose message says
    what happened and what to do) is no crash: Prefect logs its exception
    with a traceback, once as the run fails and once more, in a deployment's
    process of its own, as "Engine execution exited with unexpected
    exception", and log-based alerts take tracebacks for crashes. The first
    line is kept without its traceback, the repeat left out; any other
    exception is logged as Prefect logs it."""

    def filter(self, record: logging.LogRecord) -> bool:
        from schemas.errors import SearchlakeError
        error = record.exc_info[1] if record.exc_info else None
        if not (isinstance(error, SearchlakeError) and error.user_error):
            return True
        if record.getMessage().startswith("Engine execution exited with unexpected exception"):
            return False
        record.exc_info = record.exc_text = None
        return True


def quiet_user_errors() -> None:
    logging.getLogger("prefect.flow_runs").addFilter(UserErrorsAreNoCrash())


def retry_when_busy(task, task_run, state) -> bool:
    """Retry a task only when waiting can help: what it raised is transient
    (tasks/common/errors.py), e.g. the catalog was busy (another command or
    program held it past the lock timeout, over which the lake already
    waited and ran the work again)."""
    from schemas.errors import is_transient
    return is_transient(state.data)
