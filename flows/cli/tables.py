"""Query results at a terminal. A table when its columns fit the terminal's
width, else one block of `column │ value` lines per row (psql's \\x auto):
a table of twenty columns squeezed into 80 characters is a column of single
letters. Each cell is one line: the lake's text with its control characters
stripped (printable) and its runs of whitespace made one space, and a cell
longer than its room ends with "…" — whole values are what --format csv and
json are for, or --wrap, which also keeps a cell's line breaks (EXPLAIN's
plan is a drawing)."""

from __future__ import annotations

from enum import Enum

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tasks.common.text import printable

ELLIPSIS = "…"
# auto: a table only if every column then shows at least this many characters
# (or the whole of its longest cell, when that is shorter)
NARROWEST = 10
LABEL_MOST = 24  # the longest column name a vertical block shows whole
VALUE_LEAST = 10  # the room a vertical block gives a value, however narrow the terminal
# No terminal line is longer: a cell is cut to this before it is measured,
# so that a megabyte of page text costs no more than a title.
LONGEST_LINE = 2000


class Layout(str, Enum):
    table = "table"
    vertical = "vertical"
    auto = "auto"


def render_rows(console: Console, columns: list[str], rows: list[list[str | None]], *,
                layout: Layout = Layout.auto, wrap: bool = False, title: str | None = None) -> None:
    """`rows` (cells as text, None for NULL) under `columns`, as `layout` says,
    then the number of rows."""
    names = [one_line(name) for name in columns]
    cells = [[shown(cell or "", wrap) for cell in row] for row in rows]
    natural = [max([cell_len(name)] + [_width(row[i]) for row in cells]) for i, name in enumerate(names)]
    widths = fitted_widths(natural, console.width)
    if layout is Layout.vertical or (layout is Layout.auto and not _readable(natural, widths)):
        if title:
            console.print(Text(title))
        _print_blocks(console, names, cells, console.width, wrap)
    else:
        _print_table(console, names, cells, widths or [1] * len(names), wrap, title)
    console.print(Text(f"({len(rows)} row{'' if len(rows) == 1 else 's'})"))


def fitted_widths(natural: list[int], width: int) -> list[int] | None:
    """The widths of a table's columns in a terminal `width` wide, given the
    longest cell of each: the widest cut to one common cap so that the table
    fits; None when not even one character a column fits."""
    cap = _largest_cap(natural, width - _TABLE_FRAME * len(natural) - 1)
    return None if cap is None else [min(w, cap) for w in natural]


# A rich table's frame takes, per column, one space either side of the cell and
# one rule, plus the closing rule.
_TABLE_FRAME = 3


def _largest_cap(natural: list[int], room: int) -> int | None:
    """The largest c with sum(min(w, c)) <= room; None when even 1 does not fit."""
    if sum(natural) <= room:
        return max(natural, default=1)
    low, high = 0, max(natural)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(min(w, middle) for w in natural) <= room:
            low = middle
        else:
            high = middle - 1
    return low or None


def _readable(natural: list[int], widths: list[int] | None) -> bool:
    return widths is not None and all(w >= min(n, NARROWEST) for w, n in zip(widths, natural))


def _print_table(console: Console, names: list[str], cells: list[list[str]], widths: list[int], wrap: bool,
                 title: str | None) -> None:
    table = Table(title=title, title_justify="left")
    for name, w in zip(names, widths):
        if wrap:
            table.add_column(Text(name), width=w, overflow="fold")
        else:
            table.add_column(clipped(name, w), width=w, no_wrap=True, overflow="ellipsis")
    for row in cells:
        table.add_row(*[Text(cell) if wrap else clipped(cell, w) for cell, w in zip(row, widths)])
    console.print(table)


def _print_blocks(console: Console, names: list[str], cells: list[list[str]], width: int, wrap: bool) -> None:
    """One block per row: a rule naming the row, then `name │ value` lines."""
    label = min(max((cell_len(name) for name in names), default=1), LABEL_MOST)
    room = max(width - label - 3, VALUE_LEAST)
    labels = [_padded(clipped(name, label), label) for name in names]
    for number, row in enumerate(cells, start=1):
        head = f"─[ row {number} ]"
        console.print(Text(head + "─" * max(min(width, label + 3 + room) - cell_len(head), 0)))
        if wrap:
            grid = Table.grid()
            grid.add_column(no_wrap=True)
            grid.add_column(overflow="fold", max_width=room)
            for name, cell in zip(labels, row):
                grid.add_row(name + Text(" │ "), Text(cell))
            console.print(grid)
        else:
            lines = [name + Text(" │ ") + clipped(cell, room) for name, cell in zip(labels, row)]
            console.print(Text("\n").join(lines))


def shown(text: str, whole: bool) -> str:
    """A cell as the terminal shows it: whole, line breaks kept; or one line."""
    return printable(text) if whole else one_line(text)


def one_line(text: str) -> str:
    """Text as one line, cut to what no terminal shows more of."""
    return " ".join(printable(text[:LONGEST_LINE]).split())


def _width(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def clipped(text: str, width: int) -> Text:
    shown = Text(text, no_wrap=True)
    if cell_len(text) > width:
        shown.truncate(max(width, 1), overflow="ellipsis")
    return shown


def _padded(text: Text, width: int) -> Text:
    return text + Text(" " * max(width - text.cell_len, 0))
