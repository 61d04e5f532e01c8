"""The library's index in segments: a re-index writes only what changed,
and ranks exactly as one index built over everything at once."""

from __future__ import annotations

import json
import multiprocessing.spawn
import os
import random
from pathlib import Path

import bm25s
import numpy as np
import pyarrow.parquet as pq
import pytest

from schemas.errors import InternalError
from tasks.common.settings import Settings
from tasks.retrieval.providers.library import extracting
from tasks.retrieval.providers.library import store
from tasks.retrieval.providers.library.documents import corpus_for
from tasks.retrieval.providers.library.index import MAX_SEGMENTS, _LOADED, index_library, open_index
from tasks.retrieval.providers.library.store import MANIFEST, store_dir
from tasks.retrieval.providers.library.ranking import ranking
from tasks.retrieval.providers.library.term_matrix import SegmentedBM25, TermMatrix

TOPICS = ["tomato blight", "chain lubrication", "sourdough hydration", "tyre pressure", "compost layers",
          "brake pads", "watering schedule", "copper fungicide", "loaf baking", "mulch drainage"]
QUERIES = ["tomato blight fungicide", "chain brake pads", "sourdough loaf", "compost mulch drainage", "tyre"]


def write_note(folder: Path, number: int, extra: str = "") -> Path:
    rng = random.Random(number)
    topic = TOPICS[number % len(TOPICS)]
    words = " ".join(rng.choice(" ".join(TOPICS).split()) for _ in range(40))
    path = folder / f"note-{number:03d}.md"
    path.write_text(f"# Note {number} on {topic}\n\n{words}.\n\nAbout {topic}, with care. {extra}\n",
                    encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000 * (number + 1)))  # a new mtime each write
    return path


@pytest.fixture
def notes(tmp_path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for number in range(30):
        write_note(folder, number)
    return folder


@pytest.fixture
def lib(settings, notes) -> Settings:
    return Settings(home=settings.home, library=notes)


def folder_of(settings: Settings) -> Path:
    return store_dir(settings, corpus_for(settings))


def manifest(settings: Settings) -> dict:
    return json.loads((folder_of(settings) / MANIFEST).read_text(encoding="utf-8"))


def fresh_ranking(settings: Settings, home: Path, query: str) -> dict[str, float]:
    """The same folder indexed at once in another home: each document's score for the query."""
    other = Settings(home=home, library=settings.library)
    return scores_by_path(open_index(other, corpus_for(other)), query)


def best(index, query: str) -> str:
    return index.documents[int(ranking(index, query).order[0])].path


def scores_by_path(index, query: str) -> dict[str, float]:
    found = ranking(index, query)
    return {index.documents[int(d)].path: round(float(found.score[d]), 6) for d in found.order}


def test_bm25_over_segments_is_bm25_over_their_live_passages():
    rng = random.Random(7)
    vocabulary = [f"w{n}" for n in range(200)]
    passages = [" ".join(rng.choices(vocabulary, k=rng.randint(1, 50))) for _ in range(400)]
    dead = np.zeros(250, dtype=bool)
    dead[::4] = True
    segmented = SegmentedBM25([TermMatrix.of(passages[:250]).without(dead), TermMatrix.of(passages[250:])])
    live = [p for n, p in enumerate(passages[:250]) if not dead[n]] + passages[250:]
    reference = bm25s.BM25(k1=1.2, b=0.75)
    reference.index([p.split() for p in live], show_progress=False)
    for query in (["w3"], ["w10", "w11", "w199"], ["nowhere"]):
        total = np.zeros(segmented.passages)
        for term in query:
            segmented.add_scores(total, term)
        assert np.allclose(total, reference.get_scores(query), atol=1e-5)
    assert segmented.df("w3") == sum("w3" in p.split() for p in live)


def test_a_reindex_writes_one_segment_of_the_changed_document_and_leaves_the_others(lib, notes):
    index_library(lib)
    folder = folder_of(lib)
    first = {p: p.stat().st_mtime_ns for p in folder.glob("s*/*")}
    write_note(notes, 4, extra="Now also about a puncture repair kit.")
    report = index_library(lib)
    assert (report.updated, report.added, report.removed, report.segments) == (1, 0, 0, 2)
    assert {p: p.stat().st_mtime_ns for p in folder.glob(f"{manifest(lib)['segments'][0]}/*")} == first
    newest = manifest(lib)["segments"][-1]
    assert pq.read_table(folder / newest / "documents.parquet").column("path").to_pylist() == ["note-004.md"]
    _LOADED.clear()  # a new process
    assert best(open_index(lib, corpus_for(lib)), "puncture repair kit") == "note-004.md"


def test_an_index_grown_by_reindexes_ranks_as_one_built_at_once(lib, notes, tmp_path):
    index_library(lib)
    write_note(notes, 1, extra="tomato blight again and again")
    write_note(notes, 30)
    (notes / "note-007.md").unlink()
    index_library(lib)
    write_note(notes, 2, extra="sourdough and more sourdough")
    (notes / "note-011.md").unlink()
    index_library(lib)
    assert manifest(lib)["dead"]  # the replaced and removed documents are still stored, and not counted
    for reader in ("in this process", "in a new process"):
        if reader == "in a new process":
            _LOADED.clear()
        grown = open_index(lib, corpus_for(lib))
        assert len(grown.documents) == 29
        for query in QUERIES:
            assert scores_by_path(grown, query) == fresh_ranking(lib, tmp_path / f"other-{query}", query)


def test_many_small_reindexes_are_merged_and_their_files_removed(lib, notes):
    index_library(lib)
    for round_number in range(MAX_SEGMENTS + 2):
        write_note(notes, round_number % 3, extra=f"round {round_number} word{round_number}")
        report = index_library(lib)
        assert report.segments <= MAX_SEGMENTS
    listed = set(manifest(lib)["segments"])
    assert {p.name for p in folder_of(lib).iterdir() if p.is_dir()} == listed
    index = open_index(lib, corpus_for(lib))
    assert len(index.documents) == 30
    assert best(index, f"word{MAX_SEGMENTS + 1}") == f"note-{(MAX_SEGMENTS + 1) % 3:03d}.md"
    assert index.df("word0") == 0 and index.df(f"word{MAX_SEGMENTS + 1}") == 1


def test_when_a_quarter_is_dead_everything_is_one_segment_again(lib, notes):
    index_library(lib)
    write_note(notes, 0, extra="first change")
    index_library(lib)
    for number in range(1, 12):
        (notes / f"note-{number:03d}.md").unlink()
    report = index_library(lib)
    assert report.removed == 11 and report.segments == 1
    assert manifest(lib)["dead"] == {}
    assert len(open_index(lib, corpus_for(lib)).documents) == 19


def test_a_process_holding_the_index_reindexes_without_reading_the_store(lib, notes, monkeypatch):
    open_index(lib, corpus_for(lib))

    def refuse(*_):
        raise AssertionError("the store was read again")
    monkeypatch.setattr(store, "read_segment", refuse)
    write_note(notes, 5, extra="a saddle height chart")
    (notes / "note-006.md").unlink()
    index_library(lib)
    assert best(open_index(lib, corpus_for(lib)), "saddle height chart") == "note-005.md"


def test_a_touched_file_moves_with_its_new_time_and_is_not_read_again(lib, notes):
    index_library(lib)
    path = notes / "note-008.md"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    report = index_library(lib)
    assert (report.touched, report.updated, report.rebuilt) == (1, 0, False)
    assert index_library(lib).unchanged == 30
    _LOADED.clear()
    assert index_library(lib).unchanged == 30


@pytest.mark.parametrize("listed", [["../../outside"], ["s000001", "s000001"], "s000001", [7]])
def test_a_manifest_searchlake_did_not_write_means_indexing_again(lib, tmp_path, listed):
    index_library(lib)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept", encoding="utf-8")
    body = manifest(lib)
    body["segments"] = listed
    (folder_of(lib) / MANIFEST).write_text(json.dumps(body), encoding="utf-8")
    _LOADED.clear()
    assert len(open_index(lib, corpus_for(lib)).documents) == 30
    assert (outside / "keep.txt").read_text(encoding="utf-8") == "kept"
    assert manifest(lib)["segments"] and all(name.startswith("s") for name in manifest(lib)["segments"])


def test_a_missing_segment_means_indexing_again(lib, notes):
    index_library(lib)
    write_note(notes, 3, extra="a spoke wrench for truing wheels")
    index_library(lib)
    for path in (folder_of(lib) / manifest(lib)["segments"][0]).iterdir():
        path.unlink()
    _LOADED.clear()
    report = index_library(lib)
    assert report.added == 30 and report.segments == 1
    assert best(open_index(lib, corpus_for(lib)), "spoke wrench truing wheels") == "note-003.md"


def test_a_store_of_the_earlier_layout_is_indexed_again_and_its_files_removed(lib):
    folder = folder_of(lib)
    (folder / "bm25").mkdir(parents=True)
    (folder / "bm25" / "params.index.json").write_text("{}", encoding="utf-8")
    (folder / "documents.parquet").write_bytes(b"PAR1")
    (folder / "corpus.json").write_text('{"format": 6}', encoding="utf-8")
    report = index_library(lib)
    assert report.added == 30
    assert not {"bm25", "documents.parquet", "corpus.json"} & {p.name for p in folder.iterdir()}


def test_many_changed_files_are_extracted_by_worker_processes_as_by_this_one(lib, notes, tmp_path, monkeypatch):
    (notes / "empty.md").write_text("   \n", encoding="utf-8")
    inline = Settings(home=tmp_path / "inline", library=notes)
    inline_report = index_library(inline)
    monkeypatch.setattr(extracting, "BATCH", 4)
    monkeypatch.setattr(extracting, "POOL_AFTER", 8)
    monkeypatch.setattr(extracting, "WORKERS", 2)
    started = []
    monkeypatch.setattr(extracting.Extractor, "_hand_over",
                        lambda self, real=extracting.Extractor._hand_over: started.append(1) or real(self))
    pooled_report = index_library(lib)
    assert started  # the workers did the extraction
    assert pooled_report.added == inline_report.added == 30
    assert [s.path for s in pooled_report.skipped] == [s.path for s in inline_report.skipped] == ["empty.md"]
    pooled, alone = open_index(lib, corpus_for(lib)), open_index(inline, corpus_for(inline))
    assert pooled.documents == alone.documents
    for query in QUERIES:
        assert scores_by_path(pooled, query) == scores_by_path(alone, query)


def test_a_file_without_text_is_not_read_again_while_unchanged_and_is_still_reported(lib, notes, monkeypatch):
    empty = notes / "empty.md"
    empty.write_text("   \n", encoding="utf-8")
    first = index_library(lib)
    extracted = []
    real = extracting.extract
    monkeypatch.setattr(extracting, "extract", lambda kind, data, name: extracted.append(name) or real(kind, data, name))
    again = index_library(lib)
    assert extracted == []
    assert [s.path for s in again.skipped] == [s.path for s in first.skipped] == ["empty.md"]
    empty.write_text("# Now a note\n\nAbout a derailleur hanger.\n", encoding="utf-8")
    os.utime(empty, ns=(empty.stat().st_atime_ns, empty.stat().st_mtime_ns + 10**9))
    report = index_library(lib)
    assert extracted == ["empty.md"] and report.added == 1 and report.skipped == []
    assert best(open_index(lib, corpus_for(lib)), "derailleur hanger") == "empty.md"


@pytest.mark.filterwarnings("ignore:resource_tracker:UserWarning")  # the stdlib's, as it starts its tracker again
def test_workers_that_cannot_start_leave_the_extraction_to_this_process(lib, notes, monkeypatch):
    monkeypatch.setattr(multiprocessing.spawn, "_python_exe", b"/bin/false")  # every worker dies as it starts
    monkeypatch.setattr(extracting, "BATCH", 4)
    monkeypatch.setattr(extracting, "POOL_AFTER", 8)
    monkeypatch.setattr(extracting, "WORKERS", 2)
    report = index_library(lib)
    assert report.added == 30 and report.skipped == []
    assert best(open_index(lib, corpus_for(lib)), "tomato blight copper fungicide").startswith("note-")


def test_a_server_holding_the_index_reads_only_the_segment_another_process_wrote(lib, notes, monkeypatch):
    held = open_index(lib, corpus_for(lib))
    write_note(notes, 9, extra="a chain checker gauge")
    manifest_before = manifest(lib)
    _LOADED.clear()  # as another process: it re-indexes without the server's index in memory
    index_library(lib)
    _LOADED[str(folder_of(lib))] = ((0, 0, 0), held)  # the server's index, older than the store
    read = []
    real = store.read_segment
    monkeypatch.setattr(store, "read_segment", lambda folder, name: read.append(name) or real(folder, name))
    again = open_index(lib, corpus_for(lib))
    assert read == [n for n in manifest(lib)["segments"] if n not in manifest_before["segments"]] and len(read) == 1
    assert best(again, "chain checker gauge") == "note-009.md" and len(again.documents) == 30


def test_a_store_started_afresh_is_read_whole_even_where_segment_names_repeat(lib, notes, monkeypatch):
    held = open_index(lib, corpus_for(lib))
    body = manifest(lib)
    body["format"] = -1  # another format: everything is indexed again, from segment s000001
    (folder_of(lib) / MANIFEST).write_text(json.dumps(body), encoding="utf-8")
    write_note(notes, 12, extra="a spoke tension meter")
    _LOADED.clear()
    index_library(lib)
    assert manifest(lib)["segments"] == ["s000001"] and manifest(lib)["store"] != body["store"]
    _LOADED[str(folder_of(lib))] = ((0, 0, 0), held)  # a server still holding the first store's s000001
    assert best(open_index(lib, corpus_for(lib)), "spoke tension meter") == "note-012.md"


def test_a_store_that_cannot_be_read_even_when_indexed_again_is_one_error(lib, monkeypatch):
    index_library(lib)
    _LOADED.clear()

    def unreadable(*_):
        raise OSError("Input/output error")
    monkeypatch.setattr(store, "read_segment", unreadable)
    with pytest.raises(InternalError, match="cannot be read, even after indexing it again"):
        open_index(lib, corpus_for(lib))


def test_on_one_core_many_changed_files_are_extracted_here_a_batch_at_a_time(lib, monkeypatch):
    monkeypatch.setattr(extracting, "BATCH", 4)
    monkeypatch.setattr(extracting, "POOL_AFTER", 8)
    monkeypatch.setattr(extracting, "WORKERS", 1)
    waiting_at_each_batch = []
    real = extracting.Extractor._extract_waiting_here
    monkeypatch.setattr(extracting.Extractor, "_extract_waiting_here",
                        lambda self: waiting_at_each_batch.append(len(self.waiting)) or real(self))
    report = index_library(lib)
    assert report.added == 30
    assert max(waiting_at_each_batch) <= 9  # what was read waits for one batch at most, past the first 8
    assert best(open_index(lib, corpus_for(lib)), "tomato blight copper fungicide").startswith("note-")
