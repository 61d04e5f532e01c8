"""Search providers: one module each, one interface (see base.py)."""
