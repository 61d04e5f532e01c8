"""Another program reading the lake while searchlake works, as a notebook or
a dashboard does: plain DuckDB with the DuckLake and SQLite extensions from
their packages, no searchlake code, attaching the catalog READ_ONLY."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import duckdb


def extension_file(name: str) -> str:
    package = Path(next(iter(importlib.util.find_spec(f"duckdb_extension_{name}").submodule_search_locations)))
    return str(package / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension")


def plain_duckdb(extension_folder: Path) -> duckdb.DuckDBPyConnection:
    """DuckDB with the DuckLake extension loaded and the SQLite client
    installed from their packages into `extension_folder`, as anyone offline
    would (online, DuckDB fetches them by itself)."""
    con = duckdb.connect(config={"extension_directory": str(extension_folder),
                                 "autoinstall_known_extensions": False})
    con.execute(f"LOAD '{extension_file('ducklake')}'")
    con.execute(f"INSTALL '{extension_file('sqlite')}'")
    return con


def outside_connection(catalog: str, extension_folder: Path, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """A plain DuckDB attached to `catalog` (what follows `ducklake:`) as `lake`."""
    con = plain_duckdb(extension_folder)
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake{' (READ_ONLY)' if read_only else ''}")
    return con


# Attaches, says so, then answers lines on stdin: "begin" and "commit" hold
# and end a transaction (its snapshot), "count TABLE" prints the rows it sees.
READER = """
import sys
sys.path.insert(0, {tests!r})
from outside_reader import outside_connection
con = outside_connection({catalog!r}, {folder!r})
print("attached", flush=True)
for line in sys.stdin:
    word, *rest = line.split()
    if word == "count":
        print(con.execute(f"SELECT count(*) FROM lake.{{rest[0]}}").fetchone()[0], flush=True)
    else:
        con.execute(word)
        print("ok", flush=True)
"""


class OutsideReader:
    """The reader as a process of its own, holding its connection until closed."""

    def __init__(self, catalog: str, extension_folder: Path):
        script = READER.format(tests=str(Path(__file__).parent), catalog=catalog, folder=str(extension_folder))
        self.proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "attached", self.proc.stderr.read()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def say(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        assert answer, self.proc.stderr.read()
        return answer

    def count(self, table: str) -> int:
        return int(self.say(f"count {table}"))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
