"""Prefect flows and the command line: orchestration only."""
