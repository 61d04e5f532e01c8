"""English: how a question asks, how a sentence answers."""

from __future__ import annotations

import re

from tasks.common.text import evidence_terms, normalize, tokens
from tasks.synthesis.language import (DEFINITION, DURATION, FREQUENCY, PLACE, PROCEDURE, QUANTITY, REASON,
                                      TEMPERATURE, YES_NO, Cue, Language, with_context)


def _cue(answer: str, asks: str, framing: set[str]) -> Cue:
    # the framing words as the question has them and as their stems (what question_words gives)
    return Cue(answer, re.compile(asks), frozenset(framing) | frozenset(evidence_terms(" ".join(framing))))


_UNIT_WORDS = r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)"
CUES = (
    _cue(FREQUENCY, r"\bhow (?:often|frequently)\b|\bhow many times\b|\bwhat interval\b",
         {"often", "frequent", "frequently", "time", "times", "interval"}),
    _cue(DURATION, rf"\bhow long\b|\bhow many {_UNIT_WORDS}\b|\bhow much time\b|\bfor how long\b",
         {"long", "time", "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week",
          "weeks", "month", "months", "year", "years"}),
    _cue(TEMPERATURE, r"\bwhat temperature\b|\bhow (?:hot|warm|cold|cool)\b|\btemperature\b",
         {"temperature", "hot", "warm", "cold", "cool", "degree", "degrees"}),
    _cue(QUANTITY, r"\bhow (?:much|many|big|large|small|high|low|far|deep|heavy)\b|"
                   r"\bwhat (?:size|amount|percentage|proportion|ratio|wattage|volume|dose|level)\b",
         {"big", "large", "small", "high", "low", "far", "deep", "heavy", "size", "amount", "percentage",
          "proportion", "ratio", "volume", "level"}),
    _cue(PLACE, r"^\W*where\b|\bwhich (?:file|folder|directory|path)\b", set()),
    _cue(REASON, r"^\W*why\b", set()),
    _cue(DEFINITION, r"^\W*what (?:is|are|does .+ (?:mean|do))\b|\bwhat does .+ mean\b|\bmeaning of\b",
         {"mean", "meaning"}),
    _cue(PROCEDURE, r"\bhow (?:do|can|should|would|could) (?:i|you|we|one)\b|\bhow to\b|\bsteps?\b|"
                    r"\bwhat (?:should|do) i do\b", {"step", "steps", "do"}),
    _cue(YES_NO, r"^\W*(?:so,?\s+)?(?:is|are|was|were|can|could|do|does|did|should|would|will|must|may|"
                 r"has|have|had|shall)\b", set()),
)

_NUMBER_WORDS = r"(?:\d+(?:[.,]\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a few|several|half an?)"
_TIME_UNITS = r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|months?|years?)"
GIVES = {
    DURATION: re.compile(rf"\b{_NUMBER_WORDS}[\s-]+(?:full\s+)?{_TIME_UNITS}\b|\bovernight\b", re.IGNORECASE),
    FREQUENCY: re.compile(rf"\bevery\s+(?:{_NUMBER_WORDS}\s+)?(?:other\s+)?{_TIME_UNITS}\b|\b(?:once|twice|"
                          rf"\d+\s*(?:x|times))(?:\s+or\s+(?:twice|\w+\s+times))?\s+(?:a|an|per|each)\s+{_TIME_UNITS}\b|"
                          r"\b(?:daily|weekly|monthly|yearly|nightly|hourly)\b", re.IGNORECASE),
    TEMPERATURE: re.compile(r"\d\s*(?:°|º|degrees?\b|℃|℉)|\d\s?[CF]\b"),
    QUANTITY: re.compile(r"\d"),
}

_PART_BREAK = re.compile(
    r"\s*(?:[,;]\s*(?:and|but|or|also)?|\s(?:and|but|or|also))\s+(?=(?:then\s+)?(?:(?:how|what|when|where|which|"
    r"who|why|whom|whose)\b|(?:is|are|was|were|do|does|did|can|could|should|would|will|shall|may|might|must|has|"
    r"have)\b(?!\s*[?.!]*\s*$)))",  # an auxiliary opens a clause ("…, or can I …"), not a last verb ("check or do?")
    re.IGNORECASE)
# a clause that asks: it opens on an interrogative or an auxiliary, or on a preposition before
# a wh-word ("At what reading …", "In which file …")
_ASKS = re.compile(r"\W*(?:(?:at|in|on|for|from|to|by|with|under|after|before|of)\s+(?=(?:what|which|whom|whose|how)\b))?"
                   r"(?:how|what|when|where|which|who|why|whom|whose|is|are|was|were|do|does|did|can|could|"
                   r"should|would|will|shall|may|might|must)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[?.!])\s+(?=[A-Z])")
_ARTICLES = ("the", "a", "an")


def split(text: str) -> list[str]:
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    pieces = []
    for sentence in sentences:
        pieces += [p for p in _PART_BREAK.split(sentence) if p and p.strip(" ,;?")]
    return with_context(pieces, lambda p: p.rstrip().endswith("?") or bool(_ASKS.match(p))
                        or any(cue.asks.search(normalize(p)) for cue in CUES))


def words(text: str) -> list[str]:
    """The words a passage about `text` holds: stems of its content words,
    and a keyword named with its noun ("the with statement")."""
    return list(dict.fromkeys([*named_keywords(text), *evidence_terms(text)]))


def named_keywords(text: str) -> list[str]:
    """Pairs in which a stopword is a name: after an article and before a
    content word, as in "the with statement" or "the is operator". A passage
    about it holds the pair; "statement" alone is not it."""
    ws = tokens(text)
    return list(dict.fromkeys(f"{b} {c}" for a, b, c in zip(ws, ws[1:], ws[2:])
                              if a in _ARTICLES and not evidence_terms(b) and evidence_terms(c)))


EN = Language(
    code="en",
    cues=CUES,
    gives=GIVES,
    points_back=re.compile(r"^(?:it|this|that|these|those|they|he|she|such|then|so|also|but|instead|however|"
                           r"otherwise|therefore|thus|still|in (?:this|that|such|either|these|those) cases?)\b",
                           re.IGNORECASE),
    refers_back=re.compile(r"\b(?:these|those|such)\s+\w|\bwhich is why\b", re.IGNORECASE),
    introduces=re.compile(r"[:：]\s*$|as follows|the following|below\b", re.IGNORECASE),
    notes=frozenset("note tip warning caution important hint attention danger".split()),
    split=split,
    words=words,
)
