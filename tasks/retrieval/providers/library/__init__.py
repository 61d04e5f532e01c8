"""The library provider: your documents (or Python's docs) as text, passages and a full-text index."""
