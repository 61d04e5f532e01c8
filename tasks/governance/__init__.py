"""Governance of a research run (spec 003): policy, pre-flight, filters, gates and run records."""
