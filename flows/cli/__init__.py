"""The `searchlake` command line."""

from flows.cli.main import main

__all__ = ["main"]
