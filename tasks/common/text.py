"""The one text module: how every stage turns text into words and terms.

tokens(text)
    Words as the search index sees them: NFKC-normalized and case-folded
    runs of letters, digits and combining marks in any script (so "sys.path"
    gives "sys", "path" and "__init__" gives "init", as DuckDB fts's
    `[^\\p{L}\\p{N}\\p{M}]+` splits them); CJK runs, written without spaces,
    become overlapping character bigrams, so Chinese needs no segmenter.
terms(text)
    tokens without STOPWORDS (and lone Latin letters), stemmed with the Porter
    stemmer (PyStemmer's `porter`, Snowball's original Porter algorithm, the
    one DuckDB fts calls 'porter'); repeats kept, in order — what BM25 counts.
term_set(text)
    The distinct terms: what overlap measures compare.
keywords(text), phrases(text)
    Surface forms for planning and labels: content words in their original
    spelling, and runs of adjacent content words.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

# Han ideographs: Chinese (and Japanese kanji).
HAN_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
# CJK ideographs, kana and hangul: scripts written without spaces between words.
CJK_CHARS = "\u3040-\u30ff\uac00-\ud7af" + HAN_CHARS
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
# Chinese and Japanese with their punctuation and full-width forms: text where a
# wrapped line or a break between two characters takes no space (Korean is spaced).
UNSPACED_CHARS = "\u3000-\u30ff\uff00-\uffef" + HAN_CHARS
_CJK = re.compile(f"[{CJK_CHARS}]")
_HAN = re.compile(f"[{HAN_CHARS}]")
_WORD = re.compile(rf"[{CJK_CHARS}]+|(?:(?![{CJK_CHARS}])[^\W_])+")
_PLAIN = re.compile(r"[^\W_]+")
# CJK text has no spaces: split runs at common function characters so that
# 大语言模型在医疗诊断中的应用 yields 大语言模型 / 医疗诊断 / 应用.
_CJK_BREAK = re.compile(r"[的在和与及中对是了等或为把被从]+")
_SURFACE = re.compile(f"[{CJK_CHARS}]+|[A-Za-z0-9][A-Za-z0-9+#._-]*")

# Function words and the words questions are framed with ("how does ...
# work", "explain", "tell me"): they say nothing about the subject. CJK
# entries are bigrams, the form CJK text is indexed in, and question words.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each eg etc few for from further get gets
    had has have having he her here hers him his how i ie if in into is it its itself just me more most my no
    nor not of off on once only or other our ours out over own per please s same she should so some such t
    than that the their theirs them then there these they this those through to too under until up upon us
    very via vs versus was we were what whats when where which while who whom why will with would you your
    explain describe tell compare comparison much many way ways use uses used using make makes work works
    handle handles handled happen happens
    的 了 和 与 是 在 有 什么 如何 怎么 怎样 哪些 为什 为什么 是否 多少 哪个 请问 吗 呢 对 及 以及 关于 会 能 要""".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("porter")


def normalize(text: str | None) -> str:
    return unicodedata.normalize("NFKC", text or "").casefold()


def is_cjk(text: str) -> bool:
    """True when the text holds a character of a script written without spaces."""
    return bool(_CJK.search(text or ""))


def has_han(text: str) -> bool:
    """True when the text holds a Chinese character (what decides a report's language)."""
    return bool(_HAN.search(text or ""))


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character pairs: the usual index terms for text without spaces."""
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


def tokens(text: str | None) -> list[str]:
    text = normalize(text)
    if not _CJK.search(text):
        return _PLAIN.findall(text)
    found: list[str] = []
    for word in _WORD.findall(text):
        if CJK_RUN.match(word):
            found += cjk_bigrams(word)
        else:
            found.append(word)
    return found


def stem(word: str) -> str:
    return _stemmer().stemWord(word)


# Words a question is often framed with that can also be what it asks about
# ("customize comparison", "handle reference cycles", "how does X work"): the
# index leaves them out, the choice of evidence keeps them and weighs them by
# how common they are.
FRAMING_WORDS = frozenset("compare comparison use uses used using make makes work works handle handles handled "
                          "happen happens".split())


def terms(text: str | None, keep: frozenset[str] = frozenset()) -> list[str]:
    kept = [t for t in tokens(text) if (t not in STOPWORDS or t in keep)
            and (len(t) > 1 or not t.isascii() or t.isdigit())]
    return _stemmer().stemWords(kept)


def evidence_terms(text: str | None) -> list[str]:
    """Terms for choosing evidence: the index's and the framing words."""
    return terms(text, FRAMING_WORDS)


def term_set(text: str | None) -> set[str]:
    return set(terms(text))


def keywords(text: str) -> list[str]:
    """Content words in order of appearance, without stopwords or repeats."""
    seen, kept = set(), []
    for match in _SURFACE.findall(text):
        if _CJK.match(match):
            for part in _CJK_BREAK.split(match):
                if len(part) >= 2 and part not in seen and part not in STOPWORDS:
                    seen.add(part)
                    kept.append(part)
            continue
        word = match.strip("._-")
        lowered = word.lower()
        if lowered in STOPWORDS or lowered in seen or len(word) < 2:
            continue
        seen.add(lowered)
        kept.append(word)
    return kept


_WORD_OR_MARK = re.compile(r"[\w'’+#.-]+|[^\w\s]", re.UNICODE)


def phrases(text: str) -> list[str]:
    """Runs of adjacent content words, broken at stopwords and punctuation:
    "How does Python's garbage collector handle reference cycles?" gives
    "Python's garbage collector" and "reference cycles". CJK runs are split
    at function characters, as in `keywords`."""
    found: list[str] = []
    run: list[str] = []

    def close() -> None:
        if run:
            found.append(" ".join(run))
            run.clear()

    for token in _WORD_OR_MARK.findall(text):
        word = token.strip("'’.-")
        if _CJK.search(word):
            close()
            found += [p for p in _CJK_BREAK.split(word) if len(p) >= 2 and p not in STOPWORDS]
        elif not word or not word[0].isalnum() or word.lower() in STOPWORDS:
            close()
        else:
            run.append(word)
    close()
    seen: set[str] = set()
    return [p for p in found if not (p.lower() in seen or seen.add(p.lower()))]


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun, as a sentence says it: "1 bundle", "3 bundles"."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def printable(text: str) -> str:
    """Untrusted text as a person may be shown it (a terminal, report.md,
    report.html, the page, Prefect's UI): without control characters other
    than tab and newline (an escape sequence in a web page would retitle or
    clear the terminal) and without the bidirectional controls that reorder
    what is shown (U+202E before "gnp.exe" makes it read "exe.png")."""
    return _CONTROLS.sub("", text)


# C0 but tab and newline, DEL and C1; the bidirectional embeddings and
# overrides (U+202A-U+202E), isolates (U+2066-U+2069) and marks (U+200E,
# U+200F, U+061C).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


# A Chinese character reads as two thirds of an English word (TREC's RAG
# track counts an answer's length so; reading speeds agree).
CJK_WORD = 2 / 3
_READ_TOKEN = re.compile(f"[{CJK_CHARS}]|[^\\s{CJK_CHARS}]+")


def reading_words(text: str | None) -> float:
    """How long a text reads, in words: each run of other characters
    between spaces a word, each CJK character two thirds of one."""
    return sum(CJK_WORD if _CJK.match(token) else 1.0 for token in _READ_TOKEN.findall(text or ""))


def first_that_read_within(items: list, words: float) -> list:
    """The first of `items` (each with a `text`) that read, together, within `words` words."""
    kept, used = [], 0.0
    for item in items:
        used += reading_words(item.text)
        if used > words:
            break
        kept.append(item)
    return kept
