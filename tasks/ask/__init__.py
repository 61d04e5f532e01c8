"""Single-shot search + summary through OpenRouter (spec 004)."""
