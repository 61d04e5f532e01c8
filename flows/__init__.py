"""Prefect flows and the command line: orchestration only."""

from flows.common import use_prefect_defaults

# Before any flow module imports Prefect: importing a submodule of this
# package runs this first.
use_prefect_defaults()
