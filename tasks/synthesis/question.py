"""What a question asks, as the extractive synthesizer reads it: its parts
(a question may ask two things), and for each part the words a passage about
it holds and the kind of answer it wants (a duration, a temperature, a yes
or no, …).

Words are what the search index matches on: Porter stems of the content
words for Latin text (tasks/common/text.py), and for Chinese the words jieba
segments the question into, matched as substrings of a passage (Chinese is
written without spaces, so a passage needs no segmenting to hold a word).
Answer types come from the question's own interrogative (how long, how
often, what temperature, 多久, 吗, …): the words that only frame the
question ("long" in "how long") are not what a passage must hold — the
answer's figure is.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import lru_cache

from tasks.common.text import CJK_RUN, STOPWORDS, is_cjk, normalize, evidence_terms, tokens

# -- answer types -------------------------------------------------------------------

DURATION, FREQUENCY, TEMPERATURE, MONEY, QUANTITY = "duration", "frequency", "temperature", "money", "quantity"
YES_NO, PROCEDURE, DEFINITION, PLACE, REASON = "yes/no", "procedure", "definition", "place", "reason"
CHOICE = "choice"
MEASURES = (DURATION, FREQUENCY, TEMPERATURE, MONEY, QUANTITY)

_UNIT_WORDS = r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)"
# (answer type, its interrogative, the question's words that only frame it)
_EN_CUES = [
    (FREQUENCY, re.compile(r"\bhow (?:often|frequently)\b|\bhow many times\b|\bwhat interval\b"),
     {"often", "frequent", "frequently", "time", "times", "interval"}),
    (DURATION, re.compile(rf"\bhow long\b|\bhow many {_UNIT_WORDS}\b|\bhow much time\b|\bfor how long\b"),
     {"long", "time", "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week",
      "weeks", "month", "months", "year", "years"}),
    (TEMPERATURE, re.compile(r"\bwhat temperature\b|\bhow (?:hot|warm|cold|cool)\b|\btemperature\b"),
     {"temperature", "hot", "warm", "cold", "cool", "degree", "degrees"}),
    # "how much does … cost" asks a price; "how much memory does … cost", "the cost of a lookup" or "how
    # expensive is a call" ask another measure
    (MONEY, re.compile(r"\bhow much (?:does|do|did|will|would|could|should|can|is|are|was|were) (?:\w+\s+){0,8}?"
                       r"(?:cost|costs|charge|charges|pay|spend)\b|"
                       r"\bwhat (?:does|do|did|will|would) (?:\w+\s+){0,8}?cost\b|\bprice\b"),
     {"cost", "costs", "price", "charge", "charges", "pay", "spend"}),
    (QUANTITY, re.compile(r"\bhow (?:much|many|big|large|small|high|low|far|deep|heavy)\b|"
                          r"\bwhat (?:size|amount|percentage|proportion|ratio|wattage|volume|dose|level)\b"),
     {"big", "large", "small", "high", "low", "far", "deep", "heavy", "size", "amount", "percentage",
      "proportion", "ratio", "volume", "level"}),
    (PLACE, re.compile(r"^\W*where\b|\bwhich (?:file|folder|directory|path)\b"), set()),
    (REASON, re.compile(r"^\W*why\b"), set()),
    # which thing to choose, not how to do something ("the best way to …" asks how, and is no choice)
    (CHOICE, re.compile(r"\b(?:best|better|recommended|preferred|good)\s+(?!(?:way|method|approach)\b)\w+\s+(?:for|to)\b|"
                        r"\b(?:which|what)\b[^?]*\b(?:is|are|would be|works?)\s+(?:the\s+)?(?:best|better|recommended|"
                        r"preferred)\b|\b(?:which|what)\s+(?:\w+\s+){0,3}?should\s+(?:i|we|you)\s+(?:use|choose|pick|buy|get)\b|"
                        r"\brecommend"),
     {"best", "better", "good", "recommend", "recommended", "prefer", "preferred", "choice", "option"}),
    (DEFINITION, re.compile(r"^\W*what (?:is|are|does .+ (?:mean|do))\b|\bwhat does .+ mean\b|\bmeaning of\b"),
     {"mean", "meaning"}),
    (PROCEDURE, re.compile(r"\bhow (?:do|can|should|would|could) (?:i|you|we|one)\b|\bhow to\b|\bsteps?\b|"
                           r"\bwhat (?:should|do) i do\b"), {"step", "steps", "do"}),
    (YES_NO, re.compile(r"^\W*(?:so,?\s+)?(?:is|are|was|were|can|could|do|does|did|should|would|will|must|may|"
                        r"has|have|had|shall)\b"), set()),
]
_ZH_CUES = [
    (FREQUENCY, re.compile(r"多久一次|多长时间一次|隔多久|频率|几次|多少次|多久.{0,4}(?:换|清|喂|测)"), {"频率", "一次"}),
    (DURATION, re.compile(r"多久|多长时间|几天|几分钟|几小时|几个月|几周|多少天|多少分钟|多少小时"), {"时间"}),
    (TEMPERATURE, re.compile(r"温度|多少度|几度"), {"温度"}),
    (MONEY, re.compile(r"多少钱|价格|价钱|费用|多贵|贵不贵|贵吗"), {"价格", "价钱", "费用"}),
    (QUANTITY, re.compile(r"多少|多大|几个|多少个|多高|多低|多长"), set()),
    (PLACE, re.compile(r"哪里|在哪|哪个文件|哪个目录|什么位置|什么地方"), {"位置", "地方"}),
    (REASON, re.compile(r"为什么|为何|什么原因"), {"原因"}),
    (CHOICE, re.compile(r"(?:什么|哪个|哪种|哪款|哪一个|哪家).{0,12}(?:比较好|最好|更好|好用|合适|推荐)|推荐|选哪|选什么"),
     {"比较", "推荐", "建议", "最好", "更好", "选择", "合适", "好用"}),
    (DEFINITION, re.compile(r"什么是|是什么|什么意思|指什么"), {"意思"}),
    (PROCEDURE, re.compile(r"怎么|怎样|如何|步骤"), {"步骤", "方法", "办法"}),
    (YES_NO, re.compile(r"吗[？?]?$|能不能|可不可以|是否|能否|要不要|会不会|可以.{0,12}吗|有没有"), set()),
]
# Chinese interrogatives and function words: they frame a question, no passage
# about its subject needs them.
_ZH_FRAMING = frozenset("""怎么 怎样 如何 什么 哪个 哪些 哪里 为什么 为何 是否 能否 能不能 可不可以 要不要 会不会
    有没有 多少 多久 多长 几个 应该 需要 可以 一下 一个 这个 那个 我们 我的 你们 自己 还是 或者 时候 东西
    问题 办法 方法 现在 已经 怎么办 进行 使用 用来 没有 不是 是不是 不能 这样 这么 到底 某个 知道 想要
    好多 一些 有些 什么样 为啥 咋办""".split())

# a negation and one character ("不进" not entering): what the question does not want, no passage's word
_NEGATED_CHARACTER = re.compile("^[不没别未勿][\u4e00-\u9fff]$")

_EN_PART_BREAK = re.compile(
    r"\s*(?:[,;]\s*(?:and|but|or|also)?|\s(?:and|but|or|also))\s+(?=(?:then\s+)?(?:(?:how|what|when|where|which|"
    r"who|why|whom|whose)\b|(?:is|are|was|were|do|does|did|can|could|should|would|will|shall|may|might|must|has|"
    r"have)\b(?!\s*[?.!]*\s*$)))",  # an auxiliary opens a clause ("…, or can I …"), not a last verb ("check or do?")
    re.IGNORECASE)
# a clause that asks: it opens on an interrogative or an auxiliary, or on a preposition before
# a wh-word ("At what reading …", "In which file …")
_EN_ASKS = re.compile(r"\W*(?:(?:at|in|on|for|from|to|by|with|under|after|before|of)\s+(?=(?:what|which|whom|whose|how)\b))?"
                      r"(?:how|what|when|where|which|who|why|whom|whose|is|are|was|were|do|does|did|can|could|"
                      r"should|would|will|shall|may|might|must)\b", re.IGNORECASE)
_EN_SENTENCE_END = re.compile(r"(?<=[?.!])\s+(?=[A-Z])")
_ZH_QUESTION = re.compile("怎么|怎样|如何|什么|哪|多少|多久|多长|几|吗|是否|能否|能不能|可不可以|要不要|会不会|为什么|为何|有没有|谁|"
                          r"呢(?=\s*[？?]?\s*$)")
# a clause that only names what the asker wants to know ("想知道…是哪个软件包装的，"): the question follows it
_ZH_EMBEDDED = re.compile(r"^\W*(?:我)?(?:很|就)?(?:想|要|不|没)?(?:知道|了解|清楚|确定|搞清楚|弄清楚|弄明白|搞明白)")
_ZH_TRAILING_NE = re.compile(r"呢\s*[？?]?\s*$")
_EN_ELLIPTICAL = re.compile(r"^\W*(?:(?:and|or|but)\s+)?(?:what|how)\s+about\b|^\W*(?:and|or|but)\s+(?:for|with|in|on|at|if)\b",
                            re.IGNORECASE)


@dataclass(frozen=True)
class Part:
    """One thing the question asks."""

    text: str
    words: tuple[str, ...]     # what a passage about it holds
    answer: str | None = None  # the kind of answer it wants
    dimension: bool = False    # a planner's key dimension of the topic, not a part of the question
    framing: tuple[str, ...] = ()  # its words that only frame the answer ("temperature" in "what temperature")
    carried: tuple[str, ...] = ()  # the words of the parts before it, its likely subject when it names none

    @property
    def surfaces(self) -> dict[str, str]:
        """Each Latin word's stem → the word as the question spells it."""
        return surface_forms(self.text)


@dataclass(frozen=True)
class Question:
    text: str
    language: str  # "zh" or "en"
    parts: tuple[Part, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w for p in self.parts for w in p.words))

    @property
    def asked(self) -> list[Part]:
        """The parts of the question itself (not a planner's dimensions)."""
        return [p for p in self.parts if not p.dimension]

    @property
    def multi_part(self) -> bool:
        return len(self.asked) > 1

    def with_dimensions(self, dimensions: list[str]) -> "Question":
        """The question with a planner's key dimensions of its topic, each
        looked for as a part of its own ("licensing" of a packaging question)."""
        extra = [Part(d, tuple(question_words(d)), None, dimension=True) for d in dimensions]
        return Question(self.text, self.language, self.parts + tuple(p for p in extra if p.words))


def read_question(text: str) -> Question:
    chinese = is_cjk(text)
    pieces = _zh_parts(text) if chinese else _en_parts(text)
    parts: list[Part] = []
    for piece in pieces:
        answer, framing = _answer_type(piece, chinese)
        said = question_words(piece)
        words = tuple(w for w in said if w not in framing)
        if not words and parts:  # "…, and how often?": the same subject as the part before
            words = parts[-1].words
        if answer is None and parts and _elliptical(piece, chinese):
            answer = parts[-1].answer
        if words or answer:
            carried = tuple(dict.fromkeys(w for p in parts for w in p.words if w not in words))
            parts.append(Part(" ".join(piece.split()), words, answer, framing=tuple(w for w in said if w in framing),
                              carried=carried))
    if not parts:
        parts = [Part(" ".join(text.split()), tuple(question_words(text)), None)]
    return Question(text, "zh" if chinese else "en", tuple(_distinct(parts)))


_CONTRACTION = re.compile(r"(?<=[a-z])(?:n['’]t|['’](?:re|ve|ll|d|m|s))\b", re.IGNORECASE)


def question_words(text: str) -> list[str]:
    """The words a passage about `text` holds: Latin stems (and a keyword
    named with its noun, "with statement"), Chinese words."""
    text = _CONTRACTION.sub("", text)  # "We're" is "We", not a word "re"
    if not is_cjk(text):
        return list(dict.fromkeys([*named_keywords(text), *evidence_terms(text)]))
    found = []
    for token in tokens(CJK_RUN.sub(" ", text)):  # the Latin words among the Chinese
        found += evidence_terms(token)
    for run in CJK_RUN.findall(normalize(text)):
        found += [w for w in _segment(run) if w.split("|")[0] not in _ZH_FRAMING | STOPWORDS
                  and not _NEGATED_CHARACTER.match(w.split("|")[0])]
    return list(dict.fromkeys(found))


_ARTICLES = ("the", "a", "an")


def named_keywords(text: str) -> list[str]:
    """Pairs in which a stopword is a name: after an article and before a
    content word, as in "the with statement" or "the is operator". A passage
    about it holds the pair; "statement" alone is not it."""
    ws = tokens(text)
    return list(dict.fromkeys(f"{b} {c}" for a, b, c in zip(ws, ws[1:], ws[2:])
                              if a in _ARTICLES and not evidence_terms(b) and evidence_terms(c)))


def surface_forms(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for token in tokens(CJK_RUN.sub(" ", text)):
        for stem in evidence_terms(token):
            found.setdefault(stem, token)
    return found


def holds(word: str, termset: frozenset[str], text: str) -> bool:
    """Whether a passage (its terms and its normalized text) holds a question
    word: a Chinese word, or one of the shorter words it is made of."""
    if CJK_RUN.match(word):
        return any(w in text for w in word.split("|"))
    if " " in word:  # a named keyword: the pair as written, the keyword perhaps in quotes ('"with" statement')
        keyword, noun = word.split(" ", 1)
        return re.search(rf"(?<![^\W_])[\"'`‘“]?{re.escape(keyword)}[\"'`’”]?\s+{re.escape(noun)}", text) is not None
    return word in termset


def _segment(run: str) -> list[str]:
    """The words of a Chinese run of two or more characters; a longer word
    ("关机时") with the shorter words it is made of, as "关机时|关机|机时"."""
    words = []
    for word in _jieba().cut(run):
        if len(word) < 2:
            continue
        parts = [p for p in _jieba().cut_for_search(word) if 2 <= len(p) < len(word)] if len(word) >= 3 else []
        words.append("|".join([word, *parts]))
    return words


@lru_cache(maxsize=1)
def chinese_words(text: str) -> list[str]:
    """The distinct Chinese words (two characters or more) of a text."""
    return list(dict.fromkeys(w for run in CJK_RUN.findall(text) for w in _jieba().cut(run) if len(w) >= 2))


def _jieba():
    import jieba  # its dictionary ships in its wheel; loading it takes about half a second
    jieba.setLogLevel(logging.WARNING)
    return jieba


def _elliptical(piece: str, chinese: bool) -> bool:
    """A part that asks what the part before it asked, of something else,
    with no interrogative of its own: "…？拨号上网呢？", "… And for shrimp?"."""
    text = piece.strip()
    if not chinese:
        return bool(_EN_ELLIPTICAL.match(text))
    body = _ZH_TRAILING_NE.sub("", text)
    return body != text and not _ZH_QUESTION.search(body)


def asks_for(text: str, answer: str | None) -> bool:
    """Whether a text (a heading) asks for the kind of answer a part wants:
    "How much and how often" above the answer to "How often should I feed …?"."""
    if answer is None or answer == YES_NO:
        return False
    lowered = normalize(text)
    return any(kind == answer and cue.search(lowered) for kind, cue, _ in (_ZH_CUES if is_cjk(text) else _EN_CUES))


def _answer_type(piece: str, chinese: bool) -> tuple[str | None, set[str]]:
    lowered = normalize(piece)
    for answer, cue, framing in _ZH_CUES if chinese else _EN_CUES:
        if cue.search(lowered):
            framed = set(framing)
            if not chinese:
                framed = set(evidence_terms(" ".join(framing))) | framed
            return answer, framed
    return None, set()


def _en_parts(text: str) -> list[str]:
    sentences = [s for s in _EN_SENTENCE_END.split(text.strip()) if s.strip()]
    pieces = []
    for sentence in sentences:
        pieces += [p for p in _EN_PART_BREAK.split(sentence) if p and p.strip(" ,;?")]
    return _with_context(pieces, lambda p: p.rstrip().endswith("?") or bool(_EN_ASKS.match(p))
                         or bool(_answer_type(p, False)[0]))


def _zh_parts(text: str) -> list[str]:
    pieces = []
    for sentence in re.split(r"(?<=[？?；;])", text.strip()):
        clauses = [c for c in re.split(r"(?<=[，,])", sentence) if c.strip()]
        if sum(1 for c in clauses if _ZH_QUESTION.search(c) and not _ZH_EMBEDDED.match(c)) < 2:
            clauses = [sentence] if sentence.strip() else []
        pieces += clauses
    return _with_context(pieces, lambda p: bool(_ZH_QUESTION.search(p)))


def _with_context(pieces: list[str], asks) -> list[str]:
    """Statements that set the scene ("My filter is noisy.") join the part
    that follows them: they hold its subject, not a question of their own."""
    out, pending = [], ""
    for piece in pieces:
        if asks(piece):
            out.append(f"{pending} {piece}".strip())
            pending = ""
        else:
            pending = f"{pending} {piece}".strip()
    if pending:
        out = out[:-1] + [f"{out[-1]} {pending}"] if out else [pending]
    return out


def _distinct(parts: list[Part]) -> list[Part]:
    seen: set[tuple] = set()
    kept = []
    for part in parts:
        key = (part.words, part.answer)
        if key not in seen:
            seen.add(key)
            kept.append(part)
    return kept
