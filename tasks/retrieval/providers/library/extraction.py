"""Text extraction: the title and plain text of one document file
(Markdown, text, HTML, PDF with the optional `pypdf` package). A file with
no text, undecodable bytes, a navigation page or an unreadable PDF raises
SkipFile with the reason, for the caller's error log. Walking a folder and
cutting text into passages is documents.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from schemas.errors import UserError
from tasks.common.text import UNSPACED_CHARS


class SkipFile(UserError):
    """This file cannot be indexed; the message is the reason."""


@dataclass(frozen=True)
class Extracted:
    title: str
    text: str


def extract(kind: str, data: bytes, name: str) -> Extracted:
    """Title and plain text of one document; SkipFile when there is none."""
    if kind == "pdf":
        title, text = _pdf(data)
    elif kind == "html":
        title, text = _html(decode(data))
    else:
        text = decode(data).replace("\r\n", "\n").replace("\r", "\n")
        if kind == "markdown":
            title, text = _markdown(text)
        else:
            title = _underlined_title(text) if kind in ("rst", "text") else _first_line(text)
    if not text.strip():
        raise SkipFile("no text")
    return Extracted(title=(title or Path(name).stem).strip()[:500], text=text)


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")  # below 32 but tab, line feed, form feed, return


def decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise SkipFile("undecodable UTF-16 text") from None
    if b"\x00" in data[:8192]:
        raise SkipFile("binary file (NUL bytes)")
    # UTF-8 first; cp1252 reads most older Western text files.
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise SkipFile("binary or undecodable file (neither UTF-8 nor cp1252)")
    sample = text[:4096]
    controls = len(_CONTROLS.findall(sample))
    if sample and controls > len(sample) * 0.05:
        raise SkipFile("binary file (control characters)")
    return text


_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n(?:---|\.\.\.)\n", re.S)
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def _markdown(text: str) -> tuple[str | None, str]:
    title = None
    front = _FRONT_MATTER.match(text)
    if front:
        text = text[front.end():]
        found = re.search(r"^title:[ \t]*(.+)$", front.group(1), re.M)
        title = found.group(1).strip().strip("\"'") if found else None
    return title or _markdown_heading(text), text


def _markdown_heading(text: str) -> str | None:
    lines = text.split("\n")
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        if match := _ATX.match(line):
            return match.group(1)
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and _SETEXT.match(following):
            return line.strip()
    return None


def _underlined_title(text: str) -> str | None:
    """reStructuredText-style: a line underlined with a repeated punctuation."""
    lines = [line.rstrip() for line in text.split("\n")[:40]]
    for index, line in enumerate(lines[:-1]):
        under = lines[index + 1]
        if (line.strip() and not re.fullmatch(r"(\W)\1*", line.strip())
                and re.fullmatch(r"([=\-~^*#+`:.'\"_])\1{2,}", under) and len(under) >= len(line.strip()) * 0.6):
            return line.strip()
    return None


def _first_line(text: str) -> str | None:
    return next((line.strip() for line in text.split("\n") if line.strip()), None)


# Within a page, its main content when it marks one (Sphinx, MkDocs, Read the
# Docs and most site generators do): navigation, sidebars and footers repeat
# on every page and would match every query. DocBook's pages (most printed
# manuals: GIMP, PostgreSQL, Publican's books) mark none, but name their
# navigation bars, which carry the neighbouring sections' titles.
_MAIN = ("[role=main]", "main", "article", "div.body")
_CHROME = ("nav,header,footer,aside,[role=navigation],[role=search],[role=contentinfo],.sphinxsidebar,.related,"
           ".footer,a.headerlink,.navheader,.navfooter,.docnav,#banner")
NAVIGATION_LINK_SHARE = 0.6
TABLE_CELL_CHARS = 300  # a table with a longer cell lays out text; its rows are not data  # a page whose text is mostly link text is an index of other pages

_BLOCKS = ("p,div,section,article,main,header,footer,aside,blockquote,pre,table,tr,ul,ol,li,dl,dt,dd,"
           "h1,h2,h3,h4,h5,h6,br,hr,figure,figcaption,form,fieldset,details,summary")
_HIDDEN = "script,style,noscript,template,svg,nav,iframe,object"
# A private-use mark for the lines of preformatted text while the rest is joined (removed from the markup first).
_KEPT_NEWLINE = "\ue001"
_ITEM = "\ue002"  # where a list item starts, until it is written as "- " or "3. "
_ITEM_START = re.compile(f"{_ITEM}(\\d*)\\s*")
_UNSPACED_CHAR = re.compile(f"[{UNSPACED_CHARS}]")
_WRAP_BESIDE_CJK = re.compile(f"(?<=[{UNSPACED_CHARS}])[ \t]*\n[ \t]*(?=\\S)|(?<=\\S)[ \t]*\n[ \t]*(?=[{UNSPACED_CHARS}])")


def _html(markup: str) -> tuple[str | None, str]:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(markup.replace(_KEPT_NEWLINE, "").replace(_ITEM, ""))
    for node in tree.css(_HIDDEN):
        node.decompose()
    root = next((node for node in map(tree.css_first, _MAIN) if node is not None), None) or tree.body or tree.root
    for node in root.css(_CHROME) if root else []:
        node.decompose()
    title_node = tree.css_first("title") or (root.css_first("h1") if root else None)
    title = " ".join(title_node.text().split()) if title_node else None
    if root is not None and _mostly_links(root):
        raise SkipFile("a navigation page (mostly links)")
    return title or None, _block_text(root) if root else ""


def _block_text(root) -> str:
    """Blocks become blank-line separated paragraphs, so passages keep the
    document's structure; preformatted text keeps its lines. A newline of
    the markup beside Chinese text is what a browser makes of it — nothing
    between two Chinese characters, a space otherwise — since wrapped
    Chinese has no other sign of running on: "…你也可以键入\n”exit" 退出"
    is one sentence. (Other wrapped lines are kept: sentence splitting
    joins them, tasks/synthesis/passages.py.)"""
    for node in root.css("pre"):
        node.replace_with("\n\n" + node.text(separator="", strip=False).replace("\n", _KEPT_NEWLINE) + "\n\n")
    tables = root.css("table")
    outer = {enclosing.mem_id for enclosing in map(_enclosing_table, tables) if enclosing is not None}
    for table in tables:
        if table.mem_id not in outer and (rows := _table_rows(table)) is not None:
            table.replace_with("\n\n" + _KEPT_NEWLINE.join(rows) + "\n\n")
    for node in root.css(_BLOCKS):
        node.insert_before("\n\n")
        node.insert_after("\n\n")
    _mark_list_items(root)
    raw = root.text(separator="", strip=False)
    if _UNSPACED_CHAR.search(raw):  # the join needs such a character: other pages skip its costly pattern
        raw = _WRAP_BESIDE_CJK.sub(_browser_join, raw)
    raw = raw.replace(_KEPT_NEWLINE, "\n")
    raw = _ITEM_START.sub(lambda item: f"{item.group(1)}. " if item.group(1) else "- ", raw)
    lines = (" ".join(line.split()) for line in raw.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _mark_list_items(root) -> None:
    """A list item starts with "- " (or its number in an ordered list), as
    in Markdown: a short item ("Unplug the network cable") is then read as
    an item of its list, not as a heading."""
    numbers = {}
    for ordered in root.css("ol"):
        items = [child for child in ordered.iter() if child.tag == "li"]
        numbers.update((item.mem_id, n) for n, item in enumerate(items, 1))
    for item in root.css("li"):
        if item.text(strip=True):
            item.insert_before(f"{_ITEM}{numbers.get(item.mem_id, '')}")


def _enclosing_table(node):
    node = node.parent
    while node is not None and node.tag != "table":
        node = node.parent
    return node


def _table_rows(table) -> list[str] | None:
    """A data table as Markdown rows ("| Temperature | 24-26 °C |"), one line
    each, a header row followed by "| --- |": a reader and the quote finder
    see which cells belong together. None for a table that lays out a page
    (a cell holds paragraphs, or rows hold one cell: a note box) or links (a
    navigation bar); a table that holds a table lays out, and is not asked."""
    rows: list[str] = []
    filled = 0  # rows with two cells or more
    for tr in table.css("tr"):
        cells = tr.css("th,td")
        texts = [" ".join(cell.text(separator="").split()).replace("|", "\\|") for cell in cells]
        if any(len(text) > TABLE_CELL_CHARS for text in texts):
            return None
        filled += sum(map(bool, texts)) >= 2
        if any(texts):
            rows.append("| " + " | ".join(texts) + " |")
            if all(cell.tag == "th" for cell in cells) and len(rows) == 1:
                rows.append("|" + " --- |" * len(cells))
    return rows if filled >= 2 and not _mostly_links(table) else None


def _browser_join(wrap: re.Match) -> str:
    text = wrap.string
    return "" if _UNSPACED_CHAR.match(text[wrap.start() - 1]) and _UNSPACED_CHAR.match(text[wrap.end()]) else " "


def _mostly_links(root) -> bool:
    text = len(" ".join(root.text(separator=" ").split()))
    # a[href]: an XHTML anchor written <a id="x"/> opens a link an HTML parser keeps open to the end
    linked = sum(len(" ".join(a.text(separator=" ").split())) for a in root.css("a[href]"))
    return text > 0 and linked / text > NAVIGATION_LINK_SHARE


def _pdf(data: bytes) -> tuple[str | None, str]:
    try:
        import pypdf  # optional: `pip install pypdf` to index PDFs
    except ImportError:
        raise SkipFile("PDF support needs the optional 'pypdf' package") from None
    import io

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise SkipFile("encrypted PDF")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = reader.metadata.title if reader.metadata else None
    except SkipFile:
        raise
    except Exception as error:  # pypdf raises many types on malformed input; a bad file is a skip
        raise SkipFile(f"unreadable PDF: {type(error).__name__}: {error}"[:300]) from None
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    return (title or _first_line(text)), text
