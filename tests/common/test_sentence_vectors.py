"""The sentence model's vectors kept on disk: a passage is read once, later
questions and other processes read the kept vector, and a file another
program wrote (garbage, rows of the wrong size) costs a re-read, never a
wrong answer or an error."""

from __future__ import annotations

import logging
import sqlite3

import numpy as np

import tasks.common.sentence_model as sentence_model
import tasks.common.vector_store as vector_store
from tasks.common.sentence_model import closeness, vectors_kept_in

QUESTION = "How does Python free memory?"
PASSAGES = ["CPython frees an object when its reference count drops to zero.",
            "The cycle detector finds groups of objects that refer to each other.",
            "Tabs and spaces may not be mixed in indentation."]


def test_a_passage_is_read_once_across_processes(tmp_path, sentence_model_reads):
    read, forget = sentence_model_reads
    path = tmp_path / "cache" / "sentence-vectors.sqlite"
    with vectors_kept_in(path):
        first = closeness(QUESTION, PASSAGES)
    assert len(read) == 3 and path.is_file()
    forget()  # a new process: nothing in memory, the file on disk
    with vectors_kept_in(path):
        again = closeness(QUESTION, [*PASSAGES, "Objects with a __del__ method are finalized."])
        store = sentence_model._kept.get()
        kept = store.get([store.key("passage", PASSAGES[0])])
    assert read[3:] == ["Objects with a __del__ method are finalized."]
    assert np.allclose(again[:3], first, rtol=0, atol=1e-6)
    # the kept vector is the model's own, bit for bit
    assert np.array_equal(list(kept.values())[0], sentence_model._model().passage([PASSAGES[0]])[0])


def test_a_file_that_is_not_a_store_costs_a_reread_not_an_error(tmp_path, sentence_model_reads, caplog):
    read, forget = sentence_model_reads
    path = tmp_path / "sentence-vectors.sqlite"
    path.write_bytes(b"not a database, written by someone else" * 100)
    expected = closeness(QUESTION, PASSAGES)
    forget()
    with caplog.at_level(logging.WARNING), vectors_kept_in(path):
        got = closeness(QUESTION, PASSAGES)
    assert np.array_equal(got, expected)
    assert "unusable" in caplog.text and str(path) in caplog.text


def test_a_planted_row_of_the_wrong_size_is_read_again(tmp_path, sentence_model_reads):
    read, forget = sentence_model_reads
    path = tmp_path / "sentence-vectors.sqlite"
    expected = closeness(QUESTION, PASSAGES)
    forget()
    with vectors_kept_in(path):
        store = sentence_model._kept.get()
        key = store.key("passage", sentence_model._encodable(PASSAGES[0]))
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
            db.execute("INSERT INTO vectors VALUES (?, ?)", [key, b"\x00" * 12])
        read.clear()
        got = closeness(QUESTION, PASSAGES)
    assert PASSAGES[0] in read
    assert np.array_equal(got, expected)


def test_the_store_keeps_the_newest_vectors_within_its_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_store, "KEEP", 3)
    store = vector_store.VectorStore(tmp_path / "v.sqlite", "model", 4)
    keys = [store.key("passage", f"text {n}") for n in range(5)]
    for n, key in enumerate(keys):
        store.put({key: np.full(4, n, dtype=np.float32)})
    kept = store.get(keys)
    store.close()
    assert sorted(kept) == sorted(keys[2:])
    assert kept[keys[4]].tolist() == [4.0] * 4


def test_another_model_version_reads_its_own_vectors(tmp_path):
    one = vector_store.VectorStore(tmp_path / "v.sqlite", "e5 1.0", 4)
    one.put({one.key("passage", "text"): np.ones(4, dtype=np.float32)})
    other = vector_store.VectorStore(tmp_path / "v.sqlite", "e5 1.1", 4)
    assert other.get([other.key("passage", "text")]) == {}
    one.close()
    other.close()
