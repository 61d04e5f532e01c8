"""Chinese: how a question asks, how a sentence answers. A question's words
are those jieba segments it into, matched as substrings of a passage
(Chinese is written without spaces, so a passage needs no segmenting)."""

from __future__ import annotations

import logging
import re
from functools import lru_cache

from tasks.common.text import CJK_RUN, HAN_CHARS, STOPWORDS, evidence_terms, normalize, tokens
from tasks.synthesis.language import (DEFINITION, DURATION, FREQUENCY, PLACE, PROCEDURE, QUANTITY, REASON,
                                      TEMPERATURE, YES_NO, Cue, Language, with_context)


def _cue(answer: str, asks: str, framing: set[str]) -> Cue:
    return Cue(answer, re.compile(asks), frozenset(framing))


CUES = (
    _cue(FREQUENCY, r"多久一次|多长时间一次|隔多久|频率|几次|多少次|多久.{0,4}(?:换|清|喂|测)", {"频率", "一次"}),
    _cue(DURATION, r"多久|多长时间|几天|几分钟|几小时|几个月|几周|多少天|多少分钟|多少小时", {"时间"}),
    _cue(TEMPERATURE, r"温度|多少度|几度", {"温度"}),
    _cue(QUANTITY, r"多少|多大|几个|多少个|多高|多低|多长", set()),
    _cue(PLACE, r"哪里|在哪|哪个文件|哪个目录|什么位置|什么地方", {"位置", "地方"}),
    _cue(REASON, r"为什么|为何|什么原因", {"原因"}),
    _cue(DEFINITION, r"什么是|是什么|什么意思|指什么", {"意思"}),
    _cue(PROCEDURE, r"怎么|怎样|如何|步骤", {"步骤", "方法", "办法"}),
    _cue(YES_NO, r"吗[？?]?$|能不能|可不可以|是否|能否|要不要|会不会|可以.{0,12}吗|有没有", set()),
)

GIVES = {
    DURATION: re.compile(r"[0-9一二三四五六七八九十两几半]+\s*(?:秒|分钟|小时|天|周|星期|个月|年)"),
    FREQUENCY: re.compile(r"每(?:天|日|周|星期|月|年|小时|隔)|一天.次|定期"),
    TEMPERATURE: re.compile(r"摄氏|华氏|\d+\s*度"),
    QUANTITY: re.compile(r"[一二三四五六七八九十两百千万亿半]"),
}

# Interrogatives and function words: they frame a question, no passage about
# its subject needs them.
FRAMING = frozenset("""怎么 怎样 如何 什么 哪个 哪些 哪里 为什么 为何 是否 能否 能不能 可不可以 要不要 会不会
    有没有 多少 多久 多长 几个 应该 需要 可以 一下 一个 这个 那个 我们 我的 你们 自己 还是 或者 时候 东西
    问题 办法 方法 现在 已经 怎么办 进行 使用 用来 没有 不是 是不是 不能 这样 这么 到底 某个 知道 想要
    好多 一些 有些 什么样 为啥 咋办""".split())
# a negation and one character ("不进" not entering): what the question does not want, no passage's word
_NEGATED_CHARACTER = re.compile(f"^[不没别未勿][{HAN_CHARS}]$")
_QUESTION = re.compile("怎么|怎样|如何|什么|哪|多少|多久|多长|几|吗|是否|能否|能不能|可不可以|要不要|会不会|为什么|为何|有没有|谁|"
                       r"呢(?=\s*[？?]?\s*$)")
def split(text: str) -> list[str]:
    pieces = []
    for sentence in re.split(r"(?<=[？?；;])", text.strip()):
        clauses = [c for c in re.split(r"(?<=[，,])", sentence) if c.strip()]
        if sum(1 for c in clauses if _QUESTION.search(c)) < 2:
            clauses = [sentence] if sentence.strip() else []
        pieces += clauses
    return with_context(pieces, lambda p: bool(_QUESTION.search(p)))


def words(text: str) -> list[str]:
    """The Latin words among the Chinese (their stems), and the Chinese words
    jieba segments it into, less those that only frame a question."""
    found = [stem for token in tokens(CJK_RUN.sub(" ", text)) for stem in evidence_terms(token)]
    for run in CJK_RUN.findall(normalize(text)):
        found += [w for w in segment(run) if w.split("|")[0] not in FRAMING | STOPWORDS
                  and not _NEGATED_CHARACTER.match(w.split("|")[0])]
    return list(dict.fromkeys(found))


def segment(run: str) -> list[str]:
    """The words of a Chinese run of two or more characters; a longer word
    ("关机时") with the shorter words it is made of, as "关机时|关机|机时"."""
    found = []
    for word in _jieba().cut(run):
        if len(word) < 2:
            continue
        parts = [p for p in _jieba().cut_for_search(word) if 2 <= len(p) < len(word)] if len(word) >= 3 else []
        found.append("|".join([word, *parts]))
    return found


@lru_cache(maxsize=1)
def chinese_words(text: str) -> list[str]:
    """The distinct Chinese words (two characters or more) of a text."""
    return list(dict.fromkeys(w for run in CJK_RUN.findall(text) for w in _jieba().cut(run) if len(w) >= 2))


def _jieba():
    import jieba  # its dictionary ships in its wheel; loading it takes about half a second
    jieba.setLogLevel(logging.WARNING)
    return jieba


ZH = Language(
    code="zh",
    cues=CUES,
    gives=GIVES,
    points_back=re.compile(r"^(?:[这它其此该]|因此|所以|但是|然而|否则|而是)"),
    refers_back=re.compile(r"这些|这种|上述"),
    introduces=re.compile(r"[:：]\s*$|如下|下面|下列|以下"),
    notes=frozenset("注意 提示 警告 小心 重要".split()),
    split=split,
    words=words,
)
