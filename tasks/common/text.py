"""Small text helpers shared by planning, scoring and synthesis."""

from __future__ import annotations

import re

# CJK ideographs, kana and hangul: scripts written without spaces between words.
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
_CJK = re.compile(f"[{CJK_CHARS}]")
# CJK text has no spaces: split runs at common function characters so that
# 大语言模型在医疗诊断中的应用 yields 大语言模型 / 医疗诊断 / 应用.
_CJK_BREAK = re.compile(r"[的在和与及中对是了等或为把被从]+")
_TOKEN = re.compile(f"[{CJK_CHARS}]+|[A-Za-z0-9][A-Za-z0-9+#._-]*")
STOPWORDS = frozenset(
    """a an and are as at be between by can could did do does for from has have how i if in into is it its
    of on or over should so than that the their them then there these they this to under was what when where
    which who why will with would about vs versus compare comparison explain describe tell me please much many
    handle handles handled work works use uses used using make makes get gets do does done way ways
    的 了 和 与 是 在 有 什么 如何 怎么 哪些 为什么 吗 呢 对 及 以及 关于 会 能 要""".split()
)


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character pairs: the usual index terms for text without spaces."""
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]



def keywords(text: str) -> list[str]:
    """Content words in order of appearance, without stopwords or repeats."""
    seen, kept = set(), []
    for match in _TOKEN.findall(text):
        if _CJK.match(match):
            for part in _CJK_BREAK.split(match):
                if len(part) >= 2 and part not in seen and part not in STOPWORDS:
                    seen.add(part)
                    kept.append(part)
            continue
        word = match.strip("._-")
        lowered = word.lower()
        if lowered in STOPWORDS or lowered in seen or (len(word) < 2 and not _CJK.match(word)):
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
