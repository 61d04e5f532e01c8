"""Passage embeddings for the library's dense ranking: WordLlama, a small
static embedding model whose weights ship inside its PyPI wheel, so nothing
is downloaded. Its loader looks for the tokenizer under `tokenizer/` while the
wheel keeps it under `tokenizers/`: pointing its cache folder at the package
itself makes both the weights and the tokenizer resolve from the wheel."""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

DIM = 256
_GUARD = threading.Lock()


@lru_cache(maxsize=1)
def _model():
    # wordllama calls logging.basicConfig(INFO) on import, which would print
    # every library's log lines; a handler on the root logger makes that a no-op.
    root, placeholder = logging.getLogger(), logging.NullHandler()
    root.addHandler(placeholder)
    try:
        import wordllama
        from wordllama import WordLlama
    finally:
        root.removeHandler(placeholder)
    return WordLlama.load(dim=DIM, cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def embed(texts: list[str]) -> np.ndarray:
    """One unit-length float32 row per text."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    with _GUARD:  # one load; the tokenizer is not shared across threads safely
        vectors = _model().embed(texts, norm=True, batch_size=64)
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), DIM)
