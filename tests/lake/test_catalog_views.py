"""The lake's documented views live in its DuckLake catalog: plain DuckDB
sees every one of them after one ATTACH, at the current snapshot and at
earlier ones, and a lake made before they lived there gets them on its
next open."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tasks.lake.sql_guard import readable_tables
from tasks.lake.sqlfiles import sql_group
from tests.outside_reader import outside_connection, plain_duckdb


def test_plain_duckdb_sees_every_documented_view_after_one_attach(lake, inbox, new_bundle, new_item, settings,
                                                                  tmp_path):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1"), new_item("https://b.example/2")])))
    lake.consolidate()
    con = outside_connection(settings.catalog_location, tmp_path / "extensions")
    try:
        for name in sorted(readable_tables()):
            con.sql(f"SELECT count(*) FROM lake.{name}").fetchall()  # raises when the catalog lacks it
        assert con.sql("SELECT count(*) FROM lake.bundles").fetchone() == (1,)
        assert con.sql("SELECT consumed_count FROM lake.search_read_cursor").fetchall() == [(2,)]
        assert con.sql("SELECT count(*) FROM lake.main.bundles").fetchone() == (1,)
    finally:
        con.close()


def test_the_views_answer_under_another_name_for_the_lake(lake, inbox, new_bundle, new_item, settings, tmp_path):
    """A view names its tables without a catalog: they are the view's own
    catalog's, whatever name the reader attached it under."""
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1")])))
    con = plain_duckdb(tmp_path / "extensions")
    con.execute(f"ATTACH 'ducklake:{settings.catalog_location}' AS research_lake (READ_ONLY)")
    try:
        assert con.sql("SELECT query_id, item_count FROM research_lake.bundles").fetchall() == [("q1", 1)]
    finally:
        con.close()


def test_a_view_read_at_an_earlier_snapshot_shows_the_rows_it_had(lake, inbox, new_bundle, new_item, settings,
                                                                   tmp_path):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/1")])))
    lake.consolidate()
    con = outside_connection(settings.catalog_location, tmp_path / "extensions")
    then = con.sql("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    con.close()
    lake.ingest(inbox.write(new_bundle("q2", [new_item("https://b.example/2"), new_item("https://c.example/3")])))
    lake.consolidate()

    con = plain_duckdb(tmp_path / "extensions")
    con.execute(f"ATTACH 'ducklake:{settings.catalog_location}' AS lake (READ_ONLY)")
    con.execute(f"ATTACH 'ducklake:{settings.catalog_location}' AS lake_then (READ_ONLY, SNAPSHOT_VERSION {then})")
    try:
        assert con.sql("SELECT query_id FROM lake.bundles ORDER BY 1").fetchall() == [("q1",), ("q2",)]
        assert con.sql("SELECT query_id FROM lake_then.bundles").fetchall() == [("q1",)]
        assert con.sql(f"SELECT query_id FROM lake.bundles AT (VERSION => {then})").fetchall() == [("q1",)]
        assert con.sql(f"SELECT consumed_count FROM lake.search_read_cursor AT (VERSION => {then})").fetchall() \
            == [(1,)]
        assert con.sql("SELECT consumed_count FROM lake.search_read_cursor").fetchall() == [(3,)]
    finally:
        con.close()


def make_lake_of_the_previous_version(catalog: str, tables: Path, extensions: Path) -> None:
    """What the version before this one left: the tables and its fingerprint
    of the schema files, no view in the catalog (it made them per session)."""
    con = plain_duckdb(extensions)
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{tables}/')")
    con.execute("USE lake")
    for statement in sql_group("schema_"):
        con.execute(statement)
    fingerprint = hashlib.sha256("\n".join(sql_group("schema_")).encode()).hexdigest()[:16]
    con.execute("INSERT INTO searchlake_schema VALUES (?, now())", [fingerprint])
    con.close()


def test_a_lake_made_before_the_views_lived_in_the_catalog_gets_them_on_its_next_open(lake, settings, tmp_path):
    Path(settings.catalog_path).parent.mkdir(parents=True, exist_ok=True)
    make_lake_of_the_previous_version(settings.catalog_location, Path(settings.lake_root) / "tables",
                                      tmp_path / "extensions")
    con = outside_connection(settings.catalog_location, tmp_path / "extensions")
    with pytest.raises(duckdb.CatalogException):
        con.sql("SELECT count(*) FROM lake.bundles")
    con.close()

    assert lake.count("bundles") == 0  # any searchlake command opens the catalog

    con = outside_connection(settings.catalog_location, tmp_path / "extensions")
    try:
        for name in sorted(readable_tables()):
            con.sql(f"SELECT count(*) FROM lake.{name}").fetchall()
    finally:
        con.close()


def test_a_fresh_duckdb_process_reads_the_views_between_commands(cli, inbox, new_bundle, new_item, settings,
                                                                  tmp_path):
    assert cli.run("ingest", str(inbox.write(new_bundle("q1", [new_item("https://a.example/1")])))).returncode == 0
    reader = (f"import sys; sys.path.insert(0, {str(Path(__file__).parents[1])!r}); "
              "from outside_reader import outside_connection; "
              f"con = outside_connection({settings.catalog_location!r}, {str(tmp_path / 'extensions')!r}); "
              "print(con.sql('SELECT task_id, query_id FROM lake.bundles').fetchall())")
    done = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('t1', 'q1')]"
