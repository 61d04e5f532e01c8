"""What the flow tests share."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def prefect_engine():
    """One temporary Prefect server (SQLite) for every flow test of the session."""
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    from prefect.testing.utilities import prefect_test_harness
    with prefect_test_harness(server_startup_timeout=120):  # a loaded machine starts it slowly
        yield
