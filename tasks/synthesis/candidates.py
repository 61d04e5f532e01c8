"""The candidates for quotes: every sentence, list item and table row of the
sources' stored text, in the structure it sits in (paragraph, list, table
with its header row, section under a heading, the source's title), and the
quote a chosen sentence grows into.

A candidate is never a title, a heading, a FAQ's question or code; code is
quoted only after a sentence that introduces it ("set it as follows:").
Offsets are into the source's stored text, so every quote is verbatim."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from tasks.common.text import CJK_RUN, evidence_terms, has_han, normalize
from tasks.synthesis.base import Source
from tasks.synthesis.language import any_language, languages
from tasks.synthesis.passages import block_spans, clip, fold, sentence_spans, table_rows, trimmed, weight_len

QUOTE_CHARS = 400
SENTENCES_PER_SOURCE = 400
SHORT_BLOCK = 200      # a block this long or shorter is a list item or a line, not a paragraph
SHORT_SECTION = 800    # a section this long or shorter is read as one unit
CODE_CHARS = 300       # a code line or block longer than this is not quoted
# the labels of notes, tips and warnings (DocBook, Sphinx, Markdown callouts): a line on its own like a
# heading, but the note belongs to the section it sits in
ADMONITIONS = frozenset(label for language in languages() for label in language.notes)


# -- candidates --------------------------------------------------------------------

_CODE_MARKS = ("::=", ">>>", "{", "}", " == ", "->", "$ ")
_BULLET = re.compile(r"^(?:[-*•·]|\d{1,2}[.)]|[a-z][.)])\s+")
_NUMBERED = re.compile(r"^\d{1,2}[.)]\s+")
_ENDS_SENTENCE = re.compile(r"[.!?:;\u3002\uff01\uff1f\uff1b\uff1a][\"'\u201d\u2019)\]]*$")
_CODE_LINE = re.compile(r"^\s*[$#%>] |::|\s--?[a-z]|[=/\\|{}<>\[\]]|^\s*[a-z][\w.-]*(?:\s+[\w./=-]+)+\s*$")
# a sentence that introduces what follows it (a command, a setting, a list), one that opens on a word
# pointing back or a connective going on from what was said ("Instead: …"), one naming something said
# before it ("… none of these bacteria, which is why …"): in any language
_INTRODUCES = any_language(lambda language: language.introduces)
_PRONOUN_START = any_language(lambda language: language.points_back)
_REFERS_BACK = any_language(lambda language: language.refers_back)
_CELL_BORDER = re.compile(r"(?<!\\)\|")  # "\|" is a bar inside a cell
_RULE_CELL = re.compile(r"^\s*:?-{3,}:?\s*$")


@dataclass
class Sentence:
    source: Source
    start: int
    end: int        # end of the quoted part (a long sentence is quoted up to a word bound)
    full_end: int
    block: int      # the paragraph or list item it belongs to, counted through all sources
    section: int    # the run of blocks under one heading, counted likewise
    heading: str
    short_block: bool = False  # its block is a list item or a line, not a paragraph of prose
    short_section: bool = False  # its section is a few lines, one unit of meaning
    statement: bool = True     # a sentence to quote as evidence; else a line of code it may introduce
    brief: bool = False        # a sentence too short to be evidence, quoted only with the one before it
    row: bool = False          # a table row (its cells, without the outer bars)
    columns: str = ""          # the header row of its table, when it has one

    @property
    def text(self) -> str:
        return self.source.text[self.start:self.end]

    @cached_property
    def terms(self) -> list[str]:
        return evidence_terms(self.text)

    @cached_property
    def termset(self) -> frozenset[str]:
        return frozenset(self.terms)

    @cached_property
    def normal(self) -> str:
        return normalize(self.text)

    @property
    def clipped(self) -> bool:
        return self.end < self.full_end


@dataclass
class Window:
    """A candidate quote: one to MAX_RUN consecutive sentences of one section."""

    first: int
    last: int
    sentences: list[Sentence]

    @cached_property
    def members(self) -> list[Sentence]:
        return self.sentences[self.first:self.last + 1]

    @property
    def lead(self) -> Sentence:
        return self.members[0]

    @property
    def source(self) -> Source:
        return self.lead.source

    @property
    def start(self) -> int:
        return self.lead.start

    @property
    def end(self) -> int:
        return self.members[-1].end

    @property
    def text(self) -> str:
        return self.source.text[self.start:self.end]

    @property
    def as_read(self) -> str:
        """What the sentence model reads of it: its heading and its text."""
        return f"{self.lead.heading}: {self.text}"

    @cached_property
    def terms(self) -> list[str]:
        return [t for s in self.members for t in s.terms]

    @cached_property
    def termset(self) -> frozenset[str]:
        return frozenset(self.terms)

    @cached_property
    def normal(self) -> str:
        return " ".join(s.normal for s in self.members)

    @cached_property
    def context(self) -> tuple[frozenset[str], str]:
        """Title, heading and the sentences either side that go on from it:
        what the window is about without saying it."""
        before = self.sentences[self.first - 1] if self.first else None
        after = self.sentences[self.last + 1] if self.last + 1 < len(self.sentences) else None
        around = [s.text for s in (before, after) if s is not None and
                  (continues(s, self.lead) if s is before else continues(self.members[-1], s))]
        if self.lead.row:
            around = [intro.text for intro in [self._table_intro()] if intro is not None]
        text = " ".join([self.source.title, self.lead.heading, self.lead.columns, *around])
        return frozenset(evidence_terms(text)), normalize(text)

    def _table_intro(self) -> Sentence | None:
        """The sentence right above the table a row is in, in its section ("What I aim for in the tank.")."""
        k = self.first
        while k > 0 and self.sentences[k - 1].row and self.sentences[k - 1].section == self.lead.section:
            k -= 1
        intro = self.sentences[k - 1] if k > 0 else None
        return intro if intro is not None and intro.source is self.source and intro.section == self.lead.section \
            and not intro.row else None

    @cached_property
    def words(self) -> list[str]:
        """Its distinct plain words, for matching the question's by meaning."""
        return list(dict.fromkeys(w for w in re.findall(r"[a-z][a-z'-]{2,}", self.normal)))


def candidates(sources: list[Source]) -> list[Sentence]:
    sentences: list[Sentence] = []
    block_no = section = 0
    for source in sources:
        text, title = source.text, fold(source.title)
        heading = columns = ""
        section += 1
        spans, rows = block_spans(text), table_rows(text)
        indent = 0
        for k, (start, end) in enumerate(spans):
            block_no += 1
            block = text[start:end]
            outer, indent = indent, start - _line_start(text, start)
            if _line_start(text, start) in rows:
                if _is_rule(block):
                    continue
                if k + 1 < len(spans) and _is_rule(text[slice(*spans[k + 1])]):
                    columns = _inner(block)  # the header row, above its rule
                    continue
                sentences.extend(_row(source, start, end, block_no, section, heading, columns))
                continue
            columns = ""
            if _is_heading(block) and not _list_item(block, *(text[slice(*spans[j])] if 0 <= j < len(spans) else ""
                                                              for j in (k - 1, k + 1))):
                if fold(block.strip("#*=-~^ \t:：")) in ADMONITIONS:
                    continue  # a note's label: the note belongs to the section it sits in
                if indent > outer:
                    continue  # a short line indented under text is code or a label of it ("SUITE", "pass"), not a title
                heading, section = block.strip("#*=-~^ \t"), section + 1
                continue
            short = weight_len(" ".join(block.split())) <= SHORT_BLOCK
            for s, e in sentence_spans(text, start, end)[:SENTENCES_PER_SOURCE]:
                bullet = _BULLET.match(text[s:e])
                s += len(bullet.group()) if bullet else 0
                sentence = text[s:e]
                if fold(sentence) == title or not sentence.strip():
                    continue
                statement = quotable(sentence)
                # code, or a list item too short to stand as evidence ("- 小写字母"), is quoted only after
                # a sentence that introduces it; a sentence too short to stand as evidence ("It has to be
                # empty.") only within the paragraph of the one before it
                brief = not statement and not bullet and quotable(sentence, shortest=1)
                if statement or _is_code(sentence) or bullet or brief:
                    quoted = s + len(clip(sentence, QUOTE_CHARS)) if statement else e
                    sentences.append(Sentence(source, s, quoted, e, block_no, section, heading, short,
                                              statement=statement, brief=brief))
    _mark_short_sections(sentences)
    return sentences


def _row(source: Source, start: int, end: int, block: int, section: int, heading: str,
         columns: str) -> list[Sentence]:
    """A table row as a candidate: its cells, quoted without the outer bars."""
    text = source.text
    s, e = trimmed(text, start + 1, end - 1)
    cells = [c for c in _CELL_BORDER.split(text[s:e]) if c.strip()]
    flat = " ".join(text[s:e].split())
    if len(cells) < 2 or weight_len(flat) < 8 or not any(ch.isalpha() for ch in flat):
        return []
    return [Sentence(source, s, s + len(clip(text[s:e], QUOTE_CHARS)), e, block, section, heading,
                     short_block=True, row=True, columns=columns)]


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _inner(row: str) -> str:
    return " ".join(row.strip()[1:-1].split())


def _is_rule(row: str) -> bool:
    """The line under a table's header row: "| --- | :-: |"."""
    cells = _CELL_BORDER.split(row.strip()[1:-1])
    return all(_RULE_CELL.match(c) for c in cells)


def _mark_short_sections(sentences: list[Sentence]) -> None:
    spans: dict[int, list[int]] = {}
    for s in sentences:
        spans.setdefault(s.section, [s.start, s.end])[1] = s.end
    for s in sentences:
        start, end = spans[s.section]
        s.short_section = weight_len(s.source.text[start:end]) <= SHORT_SECTION


def windows(sentences: list[Sentence]) -> list[Window]:
    """The candidates: each sentence on its own (a quote grows from the one
    chosen, see `quote_from`)."""
    return [Window(i, i, sentences) for i, s in enumerate(sentences) if s.statement]


def quote_from(window: Window, taken: set[int], related: set[int], limit: int,
               apart: set[int] = frozenset(), close: set[int] = frozenset()) -> Window:
    """The quote a chosen sentence leads: the passage of its section around
    it, while the quote stays within `limit` characters and its sentences
    are not quoted elsewhere (nor, going back, `apart`: sentences that lead
    quotes of their own).
    - It opens with the sentence before when the chosen one opens on a word
      pointing back to it ("It", "This", "这"), and from the start of its
      paragraph when the paragraph fits, but not from a sentence that points
      back past the paragraph ("This means …").
    - It goes on through the sentences after it in its section; into code
      that the sentence introduces ("… set it as follows:") or that follows
      the paragraph it ends; into a table's next rows, or the table a
      sentence introduces, only when that row is `related` to the question
      (indices of such sentences): a table's rows answer one by one.
    - Then, while it fits, back through the sentences before it in its
      section that are `close` to the question by meaning, and the rows
      above a chosen row that are `related`: in documentation the answer is
      a passage, and the sentence chosen is often in the middle of it (a
      step of a procedure, a sentence going on from the list before it)."""
    first, last, sentences = window.first, window.last, window.sentences
    if points_back(sentences, first) and first - 1 not in taken:
        first -= 1
    while (first > 0 and first - 1 not in taken | apart and sentences[first - 1].block == sentences[first].block
           and (sentences[first - 1].statement or sentences[first - 1].brief)
           and sentences[last].end - sentences[first - 1].start <= limit
           and not _PRONOUN_START.match(sentences[first - 1].text)):
        first -= 1
    while last + 1 < len(sentences) and last + 1 not in taken and sentences[last + 1].end - sentences[first].start <= limit:
        a, b = sentences[last], sentences[last + 1]
        if a.source is not b.source or a.section != b.section:
            break
        if a.row or b.row:
            if not (last + 1 in related and b.row and (a.row or _INTRODUCES.search(a.text))):
                break
        elif b.brief:
            if b.block != a.block or not (a.statement or a.brief):
                break
        elif not b.statement and not (not a.statement or _INTRODUCES.search(a.text) or b.block == a.block + 1):
            break  # code right after the paragraph a sentence ends is what it speaks of ("… 关闭系统。" + "# shutdown -h now")
        last += 1
    while first > 0 and first - 1 not in taken | apart and sentences[last].end - sentences[first - 1].start <= limit:
        before, head = sentences[first - 1], sentences[first]
        if before.source is not head.source or before.section != head.section or not before.statement or not (
                (head.row and before.row and first - 1 in related) or (not before.row and first - 1 in close)):
            break
        first -= 1
    return Window(first, last, sentences)


def continues(a: Sentence, b: Sentence) -> bool:
    """Whether a quote ending with sentence a may go on with sentence b: the
    next sentence of a paragraph, the next item of a list, the rest of a
    short section — not another paragraph of a long text."""
    return a.source is b.source and not (a.row or b.row) and (a.block == b.block or (a.section == b.section and (
        a.short_section or (a.short_block and b.short_block))))


def _is_heading(block: str) -> bool:
    """A block of one short line that states nothing ("## Setup", "How long");
    not a line of code."""
    flat = " ".join(block.split())
    if flat.startswith("# ") and _is_code(flat[2:]):  # a root shell prompt ("# shutdown -h now"), not a title
        return False
    return "\n" not in block.strip() and (flat.startswith("#") or (weight_len(flat) <= 60 and not
                                                                     _ENDS_SENTENCE.search(flat) and not _is_code(flat)))


def _list_item(block: str, before: str, after: str) -> bool:
    """A short line that is an item of a list, not a heading: it has a bullet
    ("* zero of any numeric type", "- Unplug the cable"), or a number and
    follows a sentence that introduces it or sits beside another item
    ("1. find a module" — "4. Control Flow" numbers a heading)."""
    flat = block.strip()
    if not _BULLET.match(flat):
        return False
    return not _NUMBERED.match(flat) or bool(_INTRODUCES.search(before.strip()) or _BULLET.match(before.strip())
                                             or _BULLET.match(after.strip()))


def _is_code(text: str) -> bool:
    """A command, a configuration line or a path: what documentation shows in code blocks."""
    return bool(_CODE_LINE.search(text)) and weight_len(" ".join(text.split())) <= CODE_CHARS


def quotable(sentence: str, shortest: int = 20) -> bool:
    """A sentence a reader can take as evidence: it states (a question, as in
    a FAQ, answers nothing), is mostly words (not code or a table row) and
    is not too short to stand alone (`shortest`, in weighted characters)."""
    flat = " ".join(sentence.split())
    if weight_len(flat) < shortest or any(mark in flat for mark in _CODE_MARKS) or flat.startswith("#"):
        return False
    if flat.rstrip("\"'\u201d\u2019)]").endswith(("?", "\uff1f")):
        return False
    if sum(ch.isalpha() or ch.isspace() for ch in flat) < 0.6 * len(flat):
        return False
    # a few Chinese characters among names and paths are a label, not a statement
    return sum(len(run) for run in CJK_RUN.findall(flat)) >= 6 or len(flat.split()) >= 3 and not has_han(flat)


def introduces(lead: Sentence, line: Sentence, previous: Sentence) -> bool:
    """Whether `line` (after `previous`) is what `lead` introduces: a
    command, a setting or a short item of a list in its section, after a
    sentence that ends on a colon or says "as follows" ("Type:" and the
    command, "如下："); or code right after the paragraph the sentence
    ends ("… 关闭系统。" and "# shutdown -h now")."""
    if lead.source is not line.source or lead.section != line.section:
        return False
    if _INTRODUCES.search(lead.text):
        return not line.statement or line.brief or line.short_block
    code = not line.statement and not line.brief
    return code and (line.block == lead.block + 1 or (previous is not lead and line.block == previous.block))


def points_back(sentences: list[Sentence], k: int) -> bool:
    """Whether sentence `k` points back to the one before it, in its block
    ("It keeps …", "In this case …", "这样…")."""
    before, sentence = (sentences[k - 1] if k else None), sentences[k]
    return bool(before is not None and not sentence.row and before.block == sentence.block and (
        _PRONOUN_START.match(sentence.text) or _REFERS_BACK.search(sentence.text)))
