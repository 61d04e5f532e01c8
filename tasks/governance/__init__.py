"""Governance of a research run (docs/research.md): policy, pre-flight, filters, gates and run records."""
