"""The library walk reads only what lies inside the library folder, and a file
name that is not UTF-8 is one skipped file, never a failed run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.retrieval.plan_store import log_skipped_files
from tasks.retrieval.providers.library import documents
from tasks.retrieval.providers.library.documents import DocumentFile, Skip, SkipFile, file_url, walk_folder
from tasks.retrieval.providers.library.index import index_library
from tests.conftest import in_thread, release_blocked_reader


@pytest.fixture
def library(tmp_path) -> Path:
    folder = tmp_path / "library"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "tides.md").write_text("# Tides\n\nTide pools hold anemones.\n")
    (tmp_path / "outside.md").write_text("# Outside\n\nA private note about anemones.\n")
    return folder


def walked(folder: Path) -> tuple[dict[str, bytes], dict[str, str]]:
    """What the walk and its reads give: each file's bytes, or why it was skipped."""
    read, skipped = {}, {}
    for found in walk_folder(folder.resolve()):
        if isinstance(found, DocumentFile):
            try:
                read[found.path] = found.read()
            except SkipFile as reason:
                skipped[found.path] = str(reason)
        else:
            assert isinstance(found, Skip)
            skipped[found.path] = found.reason
    return read, skipped


def test_links_to_files_outside_the_library_are_skipped(library):
    (library / "passwd.txt").symlink_to("/etc/passwd")
    (library / "notes" / "escape.md").symlink_to("../../outside.md")
    (library / "notes" / "alias.md").symlink_to("tides.md")  # a link inside the folder is fine

    read, skipped = walked(library)

    assert set(read) == {"notes/tides.md", "notes/alias.md"}
    assert skipped == {"passwd.txt": "a link to a file outside the folder",
                       "notes/escape.md": "a link to a file outside the folder"}
    assert all(b"root:" not in data and b"private" not in data for data in read.values())


def test_a_linked_folder_pointing_outside_is_not_walked(library, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.md").write_text("# Secret\n")
    (library / "linked").symlink_to(elsewhere, target_is_directory=True)
    read, _ = walked(library)
    assert not any(path.startswith("linked/") for path in read)


def test_a_file_name_that_is_not_utf8_is_skipped(library):
    bad = os.path.join(os.fsencode(library / "notes"), b"caf\xe9.md")
    with open(bad, "wb") as handle:
        handle.write(b"# Cafe\n\nLatin-1 named.\n")
    os.mkdir(os.path.join(os.fsencode(library), b"dir\xff"))
    with open(os.path.join(os.fsencode(library), b"dir\xff", b"inner.md"), "wb") as handle:
        handle.write(b"# Inner\n")

    read, skipped = walked(library)

    assert set(read) == {"notes/tides.md"}
    assert skipped == {"notes/caf\\xe9.md": "file name is not valid UTF-8",
                       "dir\\xff/inner.md": "file name is not valid UTF-8"}


def test_the_index_and_the_error_log_take_odd_files_in_their_stride(settings, library):
    (library / "passwd.txt").symlink_to("/etc/passwd")
    with open(os.path.join(os.fsencode(library), b"bad\xff.md"), "wb") as handle:
        handle.write(b"# Bad name\n")
    lib_settings = Settings(home=settings.home, library=library)

    report = index_library(lib_settings)
    with open_catalog(lib_settings, "test-library") as catalog:
        log_skipped_files(catalog, "t1", "library", [(s.path, s.reason) for s in report.skipped])
        logged = catalog.con.execute("SELECT url, message FROM error_log ORDER BY url").fetchall()

    assert report.documents == 1
    assert logged == [("bad\\xff.md", "file name is not valid UTF-8"),
                      ("passwd.txt", "a link to a file outside the folder")]


# -- a file swapped between the walk and the read ---------------------------------

PRIVATE = "SEARCHLAKE-PRIVATE-anemone-4711"


@pytest.mark.parametrize("swap, reason", [("FIFO", "not a regular file (a FIFO)"),
                                          ("link outside", "a link to a file outside the folder")])
def test_a_file_swapped_after_the_walk_is_skipped_and_the_index_finishes(settings, library, tmp_path,
                                                                         monkeypatch, swap, reason):
    secret = tmp_path / "private.md"
    secret.write_text(f"# Private\n\n{PRIVATE} about anemones.\n")
    victim = library / "notes" / "victim.md"
    victim.write_text("# Victim\n\nA harmless note about anemones.\n")
    walk = documents.walk_folder

    def walk_then_swap(root):
        for found in walk(root):
            if isinstance(found, DocumentFile) and found.path == "notes/victim.md":
                victim.unlink()
                if swap == "link outside":
                    victim.symlink_to(secret)
                else:
                    os.mkfifo(victim)
            yield found

    monkeypatch.setattr(documents, "walk_folder", walk_then_swap)
    try:
        report = in_thread(lambda: index_library(Settings(home=settings.home, library=library)))
    finally:
        release_blocked_reader(victim)

    assert report.documents == 1  # notes/tides.md
    assert [(s.path, s.reason) for s in report.skipped] == [("notes/victim.md", reason)]
    stored = [p for p in Path(settings.home).rglob("*") if p.is_file() and PRIVATE.encode() in p.read_bytes()]
    assert not stored


@pytest.mark.parametrize("name", ["notes.md", "a b/c#d?e%f.html", "量子/ü.txt", "[x]/y;z=1.md", "a~b/c@d.md"])
def test_a_files_url_is_its_file_uri_whatever_its_name(tmp_path, name):
    path = os.path.join(str(tmp_path), name)
    assert file_url(path) == Path(path).as_uri()  # what the index stored before, for every name
