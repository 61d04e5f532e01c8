"""The records of runs (docs/research.md): a run's `runs` row, its trace and heartbeat, and a batch's question file and rows."""
