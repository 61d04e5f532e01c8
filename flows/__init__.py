"""Prefect flows and the command line: orchestration only."""

from flows.common import quiet_user_errors, use_prefect_defaults

# Before any flow module imports Prefect: importing a submodule of this
# package runs this first.
use_prefect_defaults()
quiet_user_errors()
