"""Passage embeddings for the library's dense ranking: WordLlama, a small
static embedding model whose weights ship inside its PyPI wheel, so nothing
is downloaded. Its loader looks for the tokenizer under `tokenizer/` while the
wheel keeps it under `tokenizers/`: pointing its cache folder at the package
itself makes both the weights and the tokenizer resolve from the wheel.

A text's vector is the mean of its tokens' rows of the model's table,
scaled to unit length: WordLlama's own `embed` computes the same, but pads
each batch to its longest text and averages through a mask, which on a
library's passages (a few tokens to a few hundred) made most of the work
padding. Here the tokens are not padded, and a batch's texts are summed
as their token counts times the rows of the tokens they hold."""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from itertools import chain
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
    model = WordLlama.load(dim=DIM, cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    model.tokenizer.no_padding()
    return model


BATCH = 64  # texts tokenized and pooled at once (their tally: texts × the distinct tokens they hold)


def embed(texts: list[str]) -> np.ndarray:
    """One unit-length float32 row per text (a text without a token: zeros)."""
    vectors = np.zeros((len(texts), DIM), dtype=np.float32)
    for start in range(0, len(texts), BATCH):
        with _GUARD:  # one load; the tokenizer is not shared across threads safely
            model = _model()
            # _fast: without the characters' offsets, which nothing here reads
            encodings = model.tokenizer.encode_batch_fast(texts[start:start + BATCH], add_special_tokens=False)
        vectors[start:start + len(encodings)] = mean_rows(model.embedding, [e.ids for e in encodings])
    return vectors


def mean_rows(table: np.ndarray, ids_per_text: list[list[int]]) -> np.ndarray:
    """Per text, the mean of the rows of `table` its token ids name (ids
    beyond the table clipped to its last row, as WordLlama does), at unit
    length: each text's count of each token the texts hold, times those
    tokens' rows — one small matrix product instead of a row per token."""
    counts = np.fromiter(map(len, ids_per_text), dtype=np.int64, count=len(ids_per_text))
    ids = np.fromiter(chain.from_iterable(ids_per_text), dtype=np.int64, count=int(counts.sum()))
    np.clip(ids, 0, len(table) - 1, out=ids)
    held, where = np.unique(ids, return_inverse=True)
    text = np.repeat(np.arange(len(counts)), counts)
    tally = np.bincount(text * len(held) + where, minlength=len(counts) * len(held))
    sums = tally.reshape(len(counts), len(held)).astype(np.float32) @ table[held]
    norms = np.linalg.norm(sums, axis=1, keepdims=True)  # the mean's direction is the sum's
    return np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
