"""A landing folder: where other agents drop bundle files for the scheduled
ingest to pick up.

Waiting files are the `*.json` files below the folder, outside its
`processed/` and `refused/` subfolders. After an ingest, each file it handled
moves to `processed/<date>/` (landed, replaced or already in the lake) or
`refused/<date>/` (refused; its reason is in the `quarantine` view), keeping
its path below the landing folder, so no file is read twice. A file still
being written should carry another suffix until it is complete (write
`x.json.part`, then rename it to `x.json`).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable
from datetime import date
from pathlib import Path

from tasks.common.untrusted_files import printable_path
from tasks.lake.validation import json_files_below

log = logging.getLogger(__name__)

PROCESSED = "processed"
REFUSED = "refused"


def prepare_landing_folder(folder: Path) -> bool:
    """Create the folder when it is missing; True when it was created."""
    if folder.is_dir():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    return True


def waiting_files(folder: Path) -> list[Path]:
    """Bundle files not yet handled, in name order (links and special files
    too: the ingest refuses them, and they are filed away like any refused file)."""
    return json_files_below(folder, skip=[folder / PROCESSED, folder / REFUSED])


def file_away(folder: Path, files: Iterable[Path], refused: Iterable[str], *, day: date | None = None) -> dict:
    """Move handled files out of the way: refused ones (by source path, as
    refusals print it) to refused/<day>/, the others to processed/<day>/. A
    name already taken there gets a numbered suffix; nothing is overwritten."""
    stamp = (day or date.today()).isoformat()
    refused = set(refused)
    moved = {PROCESSED: 0, REFUSED: 0}
    for path in files:
        kind = REFUSED if printable_path(str(path)) in refused else PROCESSED
        target = _free_name(folder / kind / stamp / path.relative_to(folder))
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.move(path, target)
        except OSError as exc:  # gone already, or not ours to move: the next run sees it again
            log.warning("could not move %s to %s: %s", printable_path(str(path)), printable_path(str(target)),
                        exc.strerror or exc)
            continue
        moved[kind] += 1
    return moved


def _free_name(target: Path) -> Path:
    candidate, n = target, 1
    while os.path.lexists(candidate):  # a link moved here before counts, dangling or not
        candidate = target.with_name(f"{target.stem}.{n}{target.suffix}")
        n += 1
    return candidate
