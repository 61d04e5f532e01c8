"""The library's passage vectors: WordLlama's mean of a text's token rows,
computed without padding, and indexing workers that do not fight over cores."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from tasks.retrieval.providers.library import extracting
from tasks.retrieval.providers.library.embeddings import DIM, embed

TEXTS = [
    "Sockets",
    "How do I read a file line by line without loading it all into memory?",
    "The with statement\nwraps the execution of a block with methods defined by a context manager. " * 20,
    "  two  spaces   and\ttabs\n\nand blank lines  ",
    "量子纠缠 与 贝尔不等式：如何用 Python 模拟？",
    "emoji 🙂 and accents: café, naïve, Ærøskøbing",
    "x",
]


def test_a_text_is_the_mean_of_its_token_rows_as_wordllama_computes_it():
    """Existing indexes stay valid: the vectors are WordLlama's own, texts of
    very different lengths in one batch (where its padding applies) included."""
    import wordllama
    from wordllama import WordLlama
    reference = WordLlama.load(dim=DIM, cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    ours = embed(TEXTS * 30)  # several batches
    theirs = reference.embed(TEXTS * 30, norm=True, batch_size=64)
    assert ours.shape == (len(TEXTS) * 30, DIM) and ours.dtype == np.float32
    assert np.allclose(ours, theirs, atol=1e-6)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_a_text_without_tokens_is_a_zero_vector_not_nan():
    vectors = embed(["", "Sockets", ""])
    assert np.isfinite(vectors).all()
    assert not vectors[0].any() and not vectors[2].any() and vectors[1].any()
    assert embed([]).shape == (0, DIM)


def _threads_seen() -> tuple[str | None, int]:
    from threadpoolctl import threadpool_info
    embed(["load the model and its linear algebra"])
    return os.environ.get("TOKENIZERS_PARALLELISM"), max(pool["num_threads"] for pool in threadpool_info())


def test_an_indexing_worker_works_in_one_thread():
    """A worker per core: threads of its own would only take turns with the other workers."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=extracting.one_thread_each) as pool:
        assert pool.submit(_threads_seen).result(timeout=120) == ("false", 1)
