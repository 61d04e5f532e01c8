"""A server reads what the sentence model will read of a library (its
passages, its sentences) while it has nothing else to do, so that a new
question over that library finds them read."""

from __future__ import annotations

import pytest

from tasks.common.sentence_model import vectors_kept_in
from tasks.retrieval.providers.base import Query
from tasks.retrieval.providers.library.documents import corpus_for
from tasks.retrieval.providers.library.index import open_index
from tasks.retrieval.providers.registry import build_provider
from tasks.synthesis.base import Source
from tasks.synthesis.extractive import extractive_synthesis
from tasks.synthesis.read_ahead import ReadAhead, passage_order, texts_to_read
from tests.retrieval.test_question_ranking import DISK_PAGES, DISK_QUESTION, library_of


@pytest.fixture
def disk_library(settings, tmp_path):
    return library_of(settings, tmp_path / "zh", DISK_PAGES)


def read_all(ahead: ReadAhead) -> int:
    total = 0
    while read := ahead.turn():
        total += read
    return total


def test_a_new_question_finds_its_passages_and_sentences_read_ahead(disk_library, sentence_model_reads,
                                                                     tmp_path):
    read, forget = sentence_model_reads
    ahead = ReadAhead(limit=10_000, busy=lambda: False)
    ahead.follow(disk_library)
    index = open_index(disk_library, corpus_for(disk_library))
    assert read_all(ahead) == len(read) > index.passages  # the passages, then the sentences

    forget()  # as in another process: only the kept vectors remain
    read.clear()
    hits = build_provider("library", disk_library).search(
        Query("q", DISK_QUESTION, "library", question=DISK_QUESTION), 5)
    assert read == []  # the question's ranking read no passage anew
    sources = [Source(number=n, source_id=hit.url, url=hit.url, title=hit.title, content_text=hit.content_text)
               for n, hit in enumerate(sorted(hits, key=lambda hit: -hit.question_score), 1)]
    with vectors_kept_in(disk_library.sentence_vectors_path):  # as the report stage keeps them
        assert extractive_synthesis(sources, DISK_QUESTION).answer
    assert read == []  # nor did synthesis read a sentence anew

    forget()  # the same synthesis without what was read ahead reads them
    with vectors_kept_in(tmp_path / "other-vectors.sqlite"):
        extractive_synthesis(sources, DISK_QUESTION)
    assert read


def test_nothing_is_read_while_a_run_is_in_progress(disk_library, sentence_model_reads):
    read, _ = sentence_model_reads
    running = True
    ahead = ReadAhead(limit=1000, busy=lambda: running)
    ahead.follow(disk_library)
    assert ahead.turn() == 0 and read == []
    running = False
    assert ahead.turn() > 0 and read


def test_a_library_larger_than_the_limit_gets_every_document_s_first_passage_first(settings, tmp_path):
    paragraph = "A paragraph of the manual that says one thing about the tool, at some length. " * 10
    library = library_of(settings, tmp_path / "long", {f"page{n}.md": f"# Page {n}\n\n" + "\n\n".join(
        [paragraph] * 6) for n in range(4)})
    index = open_index(library, corpus_for(library))
    assert all(len(document.spans) > 2 for document in index.documents)
    first = passage_order(index)[:len(index.documents)]
    assert sorted(int(index.passage_doc[p]) for p in first) == list(range(len(index.documents)))
    assert all(p == index.doc_start[index.passage_doc[p]] for p in first)  # each document's first passage
    assert sorted(passage_order(index)) == list(range(index.passages))  # then all of them
    assert len(list(texts_to_read(index, limit=5))) == 5


def test_no_limit_reads_nothing_and_a_missing_library_stops_nothing(disk_library, tmp_path, sentence_model_reads):
    read, _ = sentence_model_reads
    off = ReadAhead(limit=0, busy=lambda: False)
    off.follow(disk_library)
    assert off.turn() == 0 and read == []

    gone = disk_library.model_copy(update={"library": tmp_path / "removed"})
    ahead = ReadAhead(limit=1000, busy=lambda: False)
    ahead.follow(gone)
    with pytest.raises(ValueError, match="does not exist"):
        ahead.turn()  # what the loop logs once and waits on; a later run's library replaces it
    ahead.follow(disk_library)
    assert read_all(ahead) > 0


def test_a_server_reads_ahead_the_library_its_last_run_searched(disk_library, sentence_model_reads):
    from flows.launcher import ResearchLauncher
    from schemas.request import ResearchRequest

    read, _ = sentence_model_reads
    launcher = ResearchLauncher(disk_library.model_copy(update={"library": None, "read_ahead_texts": 1000}))
    launcher._read_library_ahead(ResearchRequest(question="q", library=str(disk_library.library),
                                                 providers=["arxiv"]))
    assert launcher._reader().turn() == 0  # a run that did not search a library leaves nothing to read
    launcher._read_library_ahead(ResearchRequest(question=DISK_QUESTION, library=str(disk_library.library)))
    assert launcher._reader().turn() > 0
    assert all(any(name in text for name in ("SMART", "水果", "磁盘", "坏道", "网络")) for text in read)


def test_its_thread_reads_until_the_limit_and_stops_when_told(disk_library, sentence_model_reads):
    import time

    read, _ = sentence_model_reads
    ahead = ReadAhead(limit=8, busy=lambda: False)
    ahead.follow(disk_library)
    ahead.start()
    try:
        deadline = time.monotonic() + 60
        while len(read) < 8 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        ahead.stop()
    assert len(read) == 8
