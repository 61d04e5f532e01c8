"""The manual says what the code does: its generated pages match what the code
generates now, its links lead somewhere, every SQL view is documented with
the columns it has, and the site builds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli.reference import ROOT, generated_files

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
# [text](target) and ![alt](target); the target ends at whitespace or ')'
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("path", list(generated_files()), ids=lambda p: p.name)
def test_the_generated_pages_match_the_code(path: Path):
    generate = generated_files()[path]
    assert path.read_text(encoding="utf-8") == generate(), (
        f"{path.relative_to(ROOT)} is out of date with the code: run `make docs-gen` and commit the result")


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))  # code blocks hold no links
    return [target for target in LINK.findall(text)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "bench" / "README.md", *PAGES],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(page: Path):
    missing = [target for target in relative_links(page)
               if not (page.parent / target.split("#", 1)[0]).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to files that do not exist: {missing}"


def test_the_manual_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert not [page.name for page in PAGES if f": {page.name}" not in nav]


def documented_columns() -> dict[str, list[str]]:
    """docs/sql.md's table of views: name → the columns it lists, without
    their explanations (in parentheses) or the notes after a ';'."""
    table = {}
    for line in (DOCS / "sql.md").read_text(encoding="utf-8").splitlines():
        found = re.match(r"^\| `(\w+)`(?: \(table\))? \| (.*) \|$", line)
        if found:
            cell = found[2]
            while "(" in cell:
                cell = re.sub(r"\([^()]*\)", "", cell)
            cell = cell.split(";", 1)[0]
            table[found[1]] = [name.strip() for name in cell.split(",")]
    return table


def defined_views() -> set[str]:
    text = " ".join(path.read_text(encoding="utf-8") for path in (ROOT / "sql").glob("views_*.sql"))
    return set(re.findall(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", text, re.I))


def test_every_view_has_its_columns_in_the_manual(lake):
    documented = documented_columns()
    assert defined_views() - set(documented) == set(), "views missing from docs/sql.md"
    for name, columns in documented.items():
        actual = [row[0] for row in lake.rows(f"DESCRIBE {name}")]
        assert columns == actual, f"docs/sql.md: the columns of {name} are {actual}"


def test_the_manual_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "sql" / "index.html").exists()
