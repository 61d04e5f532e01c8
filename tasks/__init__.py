"""Units of work: plain functions that flows wrap as Prefect tasks."""
