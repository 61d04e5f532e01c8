"""Landing's fast path (schemas.bundle.FAST_BUNDLE) must give exactly what
full validation gives: same verdict, same catalog row, same Parquet rows."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.check_fast_path import main  # noqa: E402


def test_fast_path_gives_what_full_validation_gives(capsys):
    assert main(["--items", "4000"]) == 0
    assert "fast path identical to full validation" in capsys.readouterr().out
