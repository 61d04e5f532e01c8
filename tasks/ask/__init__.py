"""Single-shot search + summary through OpenRouter (docs/ask.md)."""
