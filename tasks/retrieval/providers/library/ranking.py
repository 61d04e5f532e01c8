"""How the library ranks its documents for a text (`ranking`) and for a
task's question (`question_ranking`), and the scores its hits carry.

Ranking (see `_ranking`): BM25 over passages with pseudo-relevance feedback
(RM3), fused by reciprocal rank with a small dense model's passage
similarity. Chosen by measurement (docs/relevance.md; figures in bench/README.md).

provider_score — the fused score of the hit for the query, in [0, 1]: the
reciprocal-rank fusion divided by its largest value, times the calibrated
BM25 score of the query's best passage in the whole library. BM25 is
unbounded and depends on the corpus and the query, so it is calibrated
against the query itself (dividing by the best result's score would make a
weak best match look perfect). With t over the query's distinct terms
(tasks/common/text.py terms) and idf(t) as the index computes it:

    r = bm25(best passage) · (k1 + 1) / Σ_t idf(t)
    c = Σ_{t in the passage} idf(t) / Σ_t idf(t)
    calibrated = (1 − 5^(−r)) · √c

Σ idf(t) / (k1 + 1) is the BM25 of a passage holding every query term once at
average length, so that passage scores 0.8; repeated terms saturate towards
1 − 5^(−(k1+1)) ≈ 0.97. The coverage factor √c keeps a passage that repeats
one query term from scoring like one that holds them all. Query terms the
corpus never contains keep their (largest) idf in both sums, so a question
about something the library lacks scores low even for its best hit.

question_score — the same score of the same document for the task's
question (`Query.question`): its relevance to the question, whatever query
found it, so that every hit of a task is ranked on one scale. The question's
ranking also reads meaning (`question_ranking`): the multilingual sentence
model reads the best passages of the first documents, in English and Chinese
alike, and its order joins the fusion.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tasks.common.sentence_model import closeness, vectors_kept_in
from tasks.common.text import is_cjk, terms
from tasks.retrieval.bm25 import K1, feedback_weights
from tasks.retrieval.providers.library.embeddings import embed
from tasks.retrieval.providers.library.index import LibraryIndex

SCORE_BASE = 5.0  # r = 1 (every term once, average length) -> 1 - 1/5 = 0.8


def calibrated_score(bm25: float, idf_sum: float, matched_idf: float) -> float:
    """See the module docstring: (1 − 5^(−bm25·(k1+1)/Σidf)) · √(matched idf / Σidf)."""
    if idf_sum <= 0 or bm25 <= 0 or matched_idf <= 0:
        return 0.0
    coverage = min(1.0, matched_idf / idf_sum)
    return round((1.0 - SCORE_BASE ** (-bm25 * (K1 + 1) / idf_sum)) * coverage ** 0.5, 6)



NEXT_PASSAGES, NEXT_WEIGHT = 2, 0.3  # a document: its best passage + 0.3 × its next two
RRF_K = 60


@dataclass(frozen=True)
class Ranking:
    order: np.ndarray  # the matching documents, best first
    score: np.ndarray  # per document, in [0, 1]
    passage: np.ndarray  # per document, the passage shown as its snippet
    passages: np.ndarray  # per passage, its (expanded) lexical score; across languages, its cosine
    coverage: float = 0.0  # the calibrated score of the text's best passage: a document's score is this × its fusion
    across: bool = False  # ranked by meaning alone: the text is in another language than the library


def ranking(index: LibraryIndex, text: str) -> Ranking:
    """The library's ranking of its documents for a text (kept on the index:
    every query of a task asks for the question's again)."""
    return index.remembered(("ranking", text), lambda: _ranking(index, text))


def _ranking(index: LibraryIndex, text: str) -> Ranking:
    """Lexical: BM25 of the text expanded by pseudo-relevance feedback (RM3),
    a document scoring as its best passage plus a share of its next ones.
    Dense: the best passage's cosine with the text's embedding — for text
    that is not Chinese: the model is English only, and on Chinese questions
    it lowered MRR@10 from 0.847 to 0.779 (bench/answers, debian_ref_zh).
    The orders are fused by reciprocal rank (k = 60); only documents with a
    lexical match are ranked. The fused score, divided by its largest
    possible value, is scaled by the calibrated score of the text's best
    lexical match in the whole library — how well the library covers the
    text at all — so it stays comparable across texts."""
    wanted = terms(text)
    first = index.passage_scores(wanted)
    expanded = index.weighted_scores(feedback_weights(index, wanted, first))
    lexical = aggregate(index, expanded)
    matching = np.flatnonzero(lexical > 0)
    best_lexical, where = index.best_passages(expanded)
    if not len(matching):
        empty = np.zeros(len(index.documents))
        return Ranking(np.zeros(0, dtype=int), empty, where, expanded)
    fused, lists = _rrf(lexical[matching]), 1
    if not is_cjk(text):  # the dense model is English only: on Chinese text it measured worse than none
        dense, _ = index.best_passages(index.vectors @ embed([text])[0])
        fused, lists = fused + _rrf(dense[matching]), 2
    covered = coverage(index, wanted, first)
    score = np.zeros(len(index.documents))
    score[matching] = covered * fused / (lists / (RRF_K + 1))
    order = matching[np.argsort(-fused, kind="stable")]
    return Ranking(order, np.round(score, 6), where, expanded, covered)


# The sentence model reads the best MEANING_PASSAGES passages (by the lexical
# score) of the first MEANING_DOCUMENTS documents: some 40–90 ms a passage the
# first time, nothing once kept (sentence_model.py). MRR@10 on the tuning
# halves of the answer sets chose 20 × 3 (bench/HISTORY.md, Relevance).
MEANING_DOCUMENTS, MEANING_PASSAGES = 20, 3
# A Chinese character is about one of the model's tokens, an English word of
# six characters about 1.3: the model reads 180 characters of Chinese in about
# the time of 360 of English (sentence_model.PASSAGE_CHARS), and on the
# Chinese tuning halves it ranked as well with them as with 360 (a third of
# the time).
MEANING_CJK_CHARS = 180


# Across languages — a Chinese question over an English library, or the reverse — words match
# nothing but names ("Python"), so the sentence model ranks every passage of a library of at most
# ACROSS_PASSAGES passages by itself: some 160 ms a passage the first time on two cores (a minute or
# more for Python's docs), kept after, and read ahead by a server in its idle time. Its cosines do not tell an
# answered question from one the library lacks (0.78–0.85 for both on the tuning set), so a document's
# score is relative — ACROSS_SCORE for the best, 0 from the median down — and synthesis cautions.
ACROSS_PASSAGES = 1000
ACROSS_SCORE = 0.5


def question_ranking(index: LibraryIndex, question: str, vectors: Path) -> Ranking:
    """The ranking of a task's question: `ranking`'s, its first documents
    reordered with what the multilingual sentence model reads in them (its
    vectors kept in the file at `vectors`); across languages, the model's
    alone (`across_languages`)."""
    def ranked() -> Ranking:
        if across_languages(index, question) and index.passages <= ACROSS_PASSAGES:
            return _by_meaning_alone(index, question, vectors)
        return _by_meaning(index, question, ranking(index, question), vectors)
    return index.remembered(("question", question), ranked)


def across_languages(index: LibraryIndex, text: str) -> bool:
    """The text is written in a script without spaces (Chinese, Japanese)
    and most of the library's documents are not, or the reverse."""
    in_cjk = _documents_in_cjk(index)
    return is_cjk(text) != (int(in_cjk.sum()) * 2 > len(in_cjk))


def _documents_in_cjk(index: LibraryIndex) -> np.ndarray:
    """Per document: its title or first lines are in a script without spaces."""
    return index.remembered(("documents in cjk",), lambda: np.array(
        [is_cjk(f"{d.title} {d.text[:200]}") for d in index.documents], dtype=bool))


def _by_meaning_alone(index: LibraryIndex, question: str, vectors: Path) -> Ranking:
    """The documents in another script than the question by the best cosine
    of their passages with it, read by the sentence model, each scoring
    ACROSS_SCORE × where that cosine lies between their median (0) and the
    best (1); fused by reciprocal rank with the documents in the question's
    own script that its words match, ranked and scored by `ranking` (the
    model reads a passage in the question's language as closer, related or
    not, and words work within a language)."""
    other = _documents_in_cjk(index) != is_cjk(question)
    words = ranking(index, question)
    own = np.array([d for d in words.order if not other[d]], dtype=int)
    read = np.flatnonzero(other[index.passage_doc]) if index.passages else np.zeros(0, dtype=int)
    cosines = np.full(index.passages, -1.0)
    with vectors_kept_in(vectors):
        cosines[read] = closeness(question, [meaning_text(index, int(p)) for p in read])
    best, where = index.best_passages(cosines)
    meant = np.flatnonzero(other)
    meant = meant[np.argsort(-best[meant], kind="stable")]
    score = np.where(other, 0.0, words.score)
    if len(meant):
        low, high = float(np.median(best[meant])), float(best[meant].max())
        score[meant] = ACROSS_SCORE * np.clip((best[meant] - low) / max(high - low, 1e-9), 0.0, 1.0)
    fused = np.zeros(len(index.documents))
    fused[meant] = 1.0 / (RRF_K + np.arange(1, len(meant) + 1))
    fused[own] = 1.0 / (RRF_K + np.arange(1, len(own) + 1))
    order = np.concatenate((meant, own))
    order = order[np.argsort(-fused[order], kind="stable")]
    passage = np.where(other, where, words.passage)
    passages = np.where(other[index.passage_doc], cosines, words.passages) if index.passages else cosines
    return Ranking(order, np.round(score, 6), passage, passages, ACROSS_SCORE, across=True)


def _by_meaning(index: LibraryIndex, question: str, found: Ranking, vectors: Path) -> Ranking:
    """The first MEANING_DOCUMENTS documents of `found` get one more
    reciprocal-rank list: their order by the best cosine, in e5's query and
    passage roles, of the question with their best MEANING_PASSAGES
    passages (title and passage), beside their order in `found`. Their
    scores keep `found`'s scale (the coverage times the fused sum over its
    largest possible value); the documents after them keep their order and
    score no higher."""
    first = found.order[:MEANING_DOCUMENTS]
    if not len(first):
        return found
    owners, texts = [], []
    for doc in first:
        start, end = int(index.doc_start[doc]), int(index.doc_start[doc + 1])
        for passage in start + np.argsort(-found.passages[start:end], kind="stable")[:MEANING_PASSAGES]:
            owners.append(int(doc))
            texts.append(meaning_text(index, int(passage)))
    with vectors_kept_in(vectors):
        cosines = closeness(question, texts)
    best: dict[int, float] = {}
    for doc, cosine in zip(owners, cosines):
        best[doc] = max(best.get(doc, -1.0), float(cosine))
    cosine = np.array([best[int(doc)] for doc in first])
    fused = _rrf(-np.arange(len(first), dtype=float)) + _rrf(cosine)  # found's own order: rank 1, 2, …
    score = found.score.copy()
    score[first] = np.round(found.coverage * fused / (2 / (RRF_K + 1)), 6)
    rest = found.order[MEANING_DOCUMENTS:]
    score[rest] = np.minimum(score[rest], score[first].min())
    order = np.concatenate((first[np.argsort(-fused, kind="stable")], rest))
    return Ranking(order, score, found.passage, found.passages, found.coverage)


def meaning_text(index: LibraryIndex, passage: int) -> str:
    """What the sentence model reads of a passage of the library: its
    document's title and the passage (a Chinese one clipped)."""
    document, _, text = index.passage(passage)
    text = f"{document.title}\n{text}"
    return " ".join(text.split())[:MEANING_CJK_CHARS] if is_cjk(text) else text


def aggregate(index: LibraryIndex, scores: np.ndarray) -> np.ndarray:
    """Per document: its best passage's score plus NEXT_WEIGHT × its next NEXT_PASSAGES."""
    top = top_passage_scores(index, scores, 1 + NEXT_PASSAGES)
    return top[:, 0] + NEXT_WEIGHT * top[:, 1:].sum(axis=1)


def top_passage_scores(index: LibraryIndex, scores: np.ndarray, count: int) -> np.ndarray:
    """Per document, its `count` best passage scores, best first (0 where it
    has fewer positive ones). Only positive scores are sorted: a query's
    scores are 0 in most passages of a large library."""
    top = np.zeros((len(index.documents), count))
    held = np.flatnonzero(scores > 0)
    docs = index.passage_doc[held]
    order = np.lexsort((-scores[held], docs))  # by document, each one's best first
    held, docs = held[order], docs[order]
    rank = np.arange(len(held)) - np.searchsorted(docs, docs)  # a passage's place within its document
    kept = rank < count
    top[docs[kept], rank[kept]] = scores[held[kept]]
    return top


def _rrf(scores: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(scores))
    ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
    return 1.0 / (RRF_K + ranks)


def coverage(index: LibraryIndex, wanted: list[str], first: np.ndarray) -> float:
    """The calibrated score of the text's best passage in the library."""
    if not len(first) or first.max() <= 0:
        return 0.0
    best = int(np.argmax(first))
    idf = {t: index.idf(t) for t in dict.fromkeys(wanted)}
    held = set(index.passage_terms(best))
    return calibrated_score(float(first[best]), sum(idf.values()), sum(v for t, v in idf.items() if t in held))
