"""What the synthesizer knows of a language, one module per language
behind one small interface (Language): how a question in it is split into
parts, which interrogative asks for which kind of answer and which of the
question's words only frame it, what a sentence that gives such an answer
holds, and how a sentence points back to the one before it or introduces
what follows it.

Nothing here names the words of one question: these are the language's
own ways of asking and answering. A question is read with its own
language's knowledge; a sentence of a source, which may be in another
language than the question, is read with every language's."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# The kinds of answer a question may want.
DURATION, FREQUENCY, TEMPERATURE, QUANTITY = "duration", "frequency", "temperature", "quantity"
YES_NO, PROCEDURE, DEFINITION, PLACE, REASON = "yes/no", "procedure", "definition", "place", "reason"
MEASURES = (DURATION, FREQUENCY, TEMPERATURE, QUANTITY)


@dataclass(frozen=True)
class Cue:
    """An interrogative: the kind of answer it asks for, the pattern of a
    question (or a heading) that asks so, and the question's words that only
    frame the answer ("long" in "how long")."""

    answer: str
    asks: re.Pattern
    framing: frozenset[str]


@dataclass(frozen=True)
class Language:
    code: str
    cues: tuple[Cue, ...]                # the first that matches a part says what it asks
    gives: dict[str, re.Pattern]         # per kind of answer: what a sentence giving one holds
    points_back: re.Pattern              # a sentence opening on a word pointing back ("It", "这")
    refers_back: re.Pattern              # one naming what was said before it ("these bacteria", "上述")
    introduces: re.Pattern               # one introducing what follows it ("as follows", "如下")
    notes: frozenset[str]                # the labels of notes, tips and warnings ("Note", "提示")
    split: Callable[[str], list[str]]    # a question into the pieces that ask
    words: Callable[[str], list[str]]    # what a passage about a question holds of its words


def language_of(text: str) -> Language:
    from tasks.common.text import is_cjk
    from tasks.synthesis.language import en, zh
    return zh.ZH if is_cjk(text) else en.EN


def languages() -> tuple[Language, ...]:
    from tasks.synthesis.language import en, zh
    return en.EN, zh.ZH


def any_language(pattern: Callable[[Language], re.Pattern | None]) -> re.Pattern:
    """One pattern matching what `pattern` matches in any language (each
    with its own case rule): a source's sentence may be in another language
    than the question."""
    found = [p for p in map(pattern, languages()) if p is not None]
    return re.compile("|".join(f"(?{'i' if p.flags & re.IGNORECASE else ''}:{p.pattern})" for p in found)
                      or r"(?!)")


def with_context(pieces: list[str], asks: Callable[[str], bool]) -> list[str]:
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
