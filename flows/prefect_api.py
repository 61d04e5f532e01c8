"""Reaching the Prefect API a flow reports to, and saying in one line when it
cannot be reached: PREFECT_API_URL when set, otherwise the temporary server
Prefect starts for this process (given longer to start than Prefect's 20 s,
see flows/common.py, applied by flows/__init__.py)."""

from __future__ import annotations

import os

from schemas.errors import UserError


class PrefectUnavailable(UserError, RuntimeError):
    """No Prefect API to run the flow against; the message says what to do."""


def _unavailable(exc: BaseException) -> PrefectUnavailable | None:
    text = str(exc)
    if "ephemeral Prefect API server" in text or "ephemeral server" in text.lower():
        seconds = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
        return PrefectUnavailable(
            f"Prefect's temporary server did not start within {seconds} s (a busy machine?): try again, "
            "keep one running with `searchlake serve` (research then runs in it), or set PREFECT_API_URL "
            "to a running Prefect server (`prefect server start`)")
    url = os.environ.get("PREFECT_API_URL")
    if url and (text.startswith("Failed to reach API") or type(exc).__name__ in ("ConnectError", "ConnectTimeout")):
        return PrefectUnavailable(f"the Prefect server at PREFECT_API_URL={url} does not answer: "
                                  f"start it (`prefect server start`) or unset PREFECT_API_URL")
    return None


def run_flow(flow, *args, **kwargs):
    """Call the flow and return its final state; PrefectUnavailable when the
    Prefect API cannot be reached."""
    try:
        return flow(*args, return_state=True, **kwargs)
    except Exception as exc:
        problem = _unavailable(exc)
        if problem is not None:
            raise problem from None
        raise


def reach_api() -> None:
    """Connect to the Prefect API now (starting the temporary server if that
    is what this process uses)."""
    from prefect.client.orchestration import get_client
    try:
        with get_client(sync_client=True) as client:
            failure = client.api_healthcheck()  # returned, not raised
        if failure is not None:
            raise failure
    except Exception as exc:
        problem = _unavailable(exc)
        if problem is not None:
            raise problem from None
        raise
