"""Reading a file below a folder without being led out of it: what
read_file_inside() reads, and what it refuses without reading."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tasks.common.untrusted_files import FileRefused, printable_path, read_file_inside
from tests.conftest import in_thread, release_blocked_reader


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "folder" / "sub").mkdir(parents=True)
    (tmp_path / "folder" / "sub" / "doc.txt").write_bytes(b"inside")
    (tmp_path / "outside.txt").write_bytes(b"outside")
    return tmp_path / "folder"


def refusal(folder: Path, relative: str, **limits) -> str:
    with pytest.raises(FileRefused) as refused:
        read_file_inside(folder, relative, **limits)
    return str(refused.value)


def test_a_regular_file_and_a_link_to_one_inside_the_folder_are_read(folder):
    (folder / "alias.txt").symlink_to("sub/doc.txt")
    (folder / "linked-sub").symlink_to("sub", target_is_directory=True)
    assert read_file_inside(folder, "sub/doc.txt") == b"inside"
    assert read_file_inside(folder, "alias.txt") == b"inside"
    assert read_file_inside(folder, "linked-sub/doc.txt") == b"inside"


@pytest.mark.parametrize("link, target", [("up.txt", "../outside.txt"), ("abs.txt", "{tmp}/outside.txt"),
                                          ("environ.txt", "/proc/self/environ"), ("sub", "{tmp}")])
def test_links_leading_out_of_the_folder_are_refused(folder, tmp_path, link, target):
    if link == "sub":  # a folder on the way replaced by a link
        os.rename(folder / "sub", tmp_path / "moved")
        (tmp_path / "doc.txt").write_bytes(b"outside")
    (folder / link).symlink_to(target.format(tmp=tmp_path))
    relative = "sub/doc.txt" if link == "sub" else link
    assert refusal(folder, relative) == "a link to a file outside the folder"


def test_special_files_are_refused_without_blocking(folder, tmp_path):
    os.mkfifo(folder / "pipe.txt")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(folder / "socket.txt"))
    (folder / "null.txt").symlink_to("/dev/null")  # outside, and a device
    try:
        assert in_thread(lambda: refusal(folder, "pipe.txt")) == "not a regular file (a FIFO)"
    finally:
        release_blocked_reader(folder / "pipe.txt")
        listening.close()
    assert refusal(folder, "socket.txt") == "not a regular file (a socket)"
    assert refusal(folder, "sub") == "not a regular file (a folder)"
    assert refusal(folder, "null.txt") == "a link to a file outside the folder"


def test_a_size_limit_is_checked_on_the_opened_file(folder):
    assert read_file_inside(folder, "sub/doc.txt", max_bytes=6) == b"inside"
    assert refusal(folder, "sub/doc.txt", max_bytes=5) == "too large (6 bytes; limit 5)"


# a path may come from a catalog row anyone could write: a NUL, None or bytes is no path either
@pytest.mark.parametrize("relative", ["../outside.txt", "sub/../../outside.txt", "", "/etc/passwd", "sub/doc.txt\0",
                                      None, b"sub/doc.txt"])
def test_only_paths_below_the_folder_are_taken(folder, relative):
    assert refusal(folder, relative) == "not a path below the folder"


def test_missing_files_are_an_os_error(folder):
    (folder / "dangling.txt").symlink_to("nowhere.txt")
    for relative in ("absent.txt", "dangling.txt"):
        with pytest.raises(FileNotFoundError):
            read_file_inside(folder, relative)


def test_a_name_that_is_not_utf8_prints_its_odd_bytes():
    assert printable_path(os.fsdecode(b"caf\xe9.json")) == "caf\\xe9.json"
    assert printable_path("café.json") == "café.json"
