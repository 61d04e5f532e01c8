"""`searchlake sql` reads the lake's views and nothing else: no statement an
analyst types writes a file, reads a file outside the lake, or loads an
extension, however it is dressed up."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.lake.query import NotReadOnly, QueryTimedOut, run_analyst_query
from tests.outside_reader import outside_connection


@pytest.fixture
def landed(lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/"), new_item("https://b.example/")])))
    lake.consolidate()
    return lake


def analyst(settings, query: str):
    with open_catalog(settings, "test-sql", read_only=True, confined=True) as catalog:
        return run_analyst_query(catalog, query)


def snapshot(home: Path) -> dict[str, str]:
    """Every file under the home, less the locks and what SQLite's readers
    keep beside the catalog (its shared-memory index, an empty log)."""
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and not p.name.endswith((".lock", ".holder", "-shm"))
            and not (p.name.endswith("-wal") and p.stat().st_size == 0)}


def catalog_files(settings) -> list[Path]:
    catalog = Path(settings.catalog_path)
    return [catalog, *(catalog.with_name(catalog.name + suffix) for suffix in (".wal", "-wal", "-shm"))]


def writing_statements(target: str) -> list[str]:
    copy = f"copy (select 42 as x) to '{target}' (format csv, use_tmp_file false)"
    return [
        f"EXPLAIN ANALYZE {copy}",
        f"explain (analyze) {copy}",
        f"explain (analyze, format json) {copy}",
        f"/* just a look */ explain /* ( */ analyze -- really\n {copy}",
        f"select 1; explain analyze {copy}",
        copy,
        f"select 1; {copy}",
        f"export database '{target}.d'",
        # the SQLite client (loaded to read a SQLite catalog) opens files itself, past the engine's file limits
        f"attach '{target}.sqlite' as w (type sqlite); create table w.t as select 42 as x",
        f"call sqlite_attach('{target}.sqlite')",
    ]


def test_no_statement_writes_a_file_anywhere(landed, settings, tmp_path):
    home = Path(settings.home)
    inside_tables = home / "lake" / "tables" / "main" / "consolidated" / "written.parquet"
    targets = [tmp_path / "outside.csv", inside_tables, *catalog_files(settings)]
    before = snapshot(home)
    for target in targets:
        for statement in writing_statements(str(target)):
            with pytest.raises(NotReadOnly):
                analyst(settings, statement)
    assert not (tmp_path / "outside.csv").exists()
    assert snapshot(home) == before
    assert analyst(settings, "select count(*) from consolidated").rows == [(2,)]


@pytest.mark.parametrize("statement", [
    "select * from read_csv('/etc/passwd')",
    "select * from read_text('/etc/passwd')",
    "select * from read_blob('/etc/passwd')",
    "select * from glob('/*')",
    "select * from read_json('/etc/hostname')",
    "select * from read_parquet('{outside}')",
    "select * from '{outside}'",
    "attach '{outside}' as other",
    "select * from sqlite_scan('{catalog}', 'ducklake_snapshot')",
    "select * from sqlite_query('{catalog}', 'select 1')",
])
def test_files_outside_the_lake_cannot_be_read(landed, settings, tmp_path, statement):
    outside = tmp_path / "secret.parquet"
    landed.rows(f"copy (select 'secret' as s) to '{outside}'")
    with pytest.raises(NotReadOnly) as refused:
        analyst(settings, statement.format(outside=outside, catalog=settings.catalog_path))
    assert "only reads" in str(refused.value)


@pytest.mark.parametrize("statement", [
    "install httpfs", "load fts", "force install json",
    "set enable_external_access = true", "set allowed_paths = ['/etc/passwd']",
    "pragma enable_profiling", "set autoload_known_extensions = true",
    "select 1; set variable results_files = ['/etc/passwd']",
    "call pragma_version()", "pivot consolidated on provider using count(*)",
    "select " + "abs(" * 900 + "1" + ")" * 900,
])
def test_extensions_and_settings_are_out_of_reach(landed, settings, statement):
    with pytest.raises(NotReadOnly):
        analyst(settings, statement)


def test_the_engine_itself_is_locked(landed, settings):
    with open_catalog(settings, "test-sql", read_only=True, confined=True) as catalog:
        found = dict(catalog.con.execute(
            "select name, value from duckdb_settings() where name in ('enable_external_access', "
            "'lock_configuration', 'autoload_known_extensions', 'autoinstall_known_extensions')").fetchall())
        spill_folder = catalog.con.execute("select current_setting('temp_directory')").fetchone()[0]
    assert found == {"enable_external_access": "false", "lock_configuration": "true",
                     "autoload_known_extensions": "false", "autoinstall_known_extensions": "false"}
    assert Path(spill_folder) == Path(settings.home) / "tmp"  # never a .tmp in the caller's folder


def test_analysts_can_read_an_earlier_snapshot(landed, settings, inbox, new_bundle, new_item):
    snapshot_before = analyst(settings, "select max(snapshot_id) from lake.snapshots()").rows[0][0]
    landed.ingest(inbox.write(new_bundle("q2", [new_item("https://c.example/")])))
    landed.consolidate()
    then = analyst(settings, f"select count(*) from consolidated AT (VERSION => {snapshot_before})")
    assert then.rows == [(2,)]
    assert analyst(settings, "select count(*) from consolidated").rows == [(3,)]
    # the views too: they live in the catalog, whose snapshots they follow
    for view in ("bundles", "lake.main.bundles"):
        assert analyst(settings, f"select query_id from {view} AT (VERSION => {snapshot_before})").rows == [("q1",)]
    assert analyst(settings, "select query_id from bundles order by 1").rows == [("q1",), ("q2",)]


def test_queries_over_every_view_still_run(landed, settings):
    assert analyst(settings, "select count(*) from results").rows == [(2,)]
    assert analyst(settings, "with r as (select * from results) select count(*) from r "
                             "join consolidated using (source_id)").rows == [(2,)]
    for query in ["describe consolidated", "summarize results", "show tables", "from bundles",
                  "explain select * from consolidated", "explain analyze select count(*) from results",
                  "/* comment */ explain (analyze) select 1", "from lake.snapshots()",
                  "select count(*) from lake.main.consolidated", "select count(*) from lake.main.bundles",
                  "select * from main.report_citations", "select list_transform([1, 2], x -> x + 1)",
                  "select upper(url), row_number() over (order by score_final desc) from consolidated",
                  "select regexp_extract(url, '//([^/]+)', 1) as host, count(*) from results group by all",
                  "select * from range(3) r(x) join unnest([1, 2]) u(y) on x = y"]:
        assert analyst(settings, query).columns, query


@pytest.mark.parametrize("definition", [
    "SELECT name AS query_id, value AS provider FROM duckdb_settings()",
    "SELECT path AS query_id FROM duckdb_databases()",
    "SELECT * FROM lake.main.bundles_of_mine",
    "SELECT content AS query_id FROM read_text('/etc/hostname')",
])
def test_a_view_that_reads_what_analysts_may_not_is_refused(landed, settings, definition):
    """The views are the catalog's, and a shared catalog has other writers:
    a documented view redefined to read the engine is refused, never run."""
    con = outside_connection(settings.catalog_location, Path(settings.home) / "other-writer", read_only=False)
    con.execute("CREATE VIEW lake.main.bundles_of_mine AS SELECT 1 AS query_id")
    con.execute(f"CREATE OR REPLACE VIEW lake.main.bundles AS {definition}")
    con.close()
    for query in ["select query_id from bundles", "select query_id from lake.main.bundles"]:
        with pytest.raises(NotReadOnly) as refused:
            analyst(settings, query)
        assert "the catalog's view bundles is not searchlake's" in str(refused.value)


@pytest.mark.parametrize("definition", [
    "MACRO lake.main.url_domain(url) AS current_setting('allowed_paths')",
    "MACRO lake.main.url_domain(url) AS (SELECT max(path) FROM duckdb_databases())",
    "MACRO lake.main.url_domain(url) AS (SELECT max(title) FROM lake.main.drop_log)",
    "MACRO lake.main.url_domain(url) AS TABLE SELECT * FROM duckdb_settings()",
])
def test_a_lake_macro_that_reads_what_analysts_may_not_is_refused(landed, settings, definition):
    """url_domain() is the catalog's too, and runs inside the views that call
    it: redefined to read anything, it is refused, never run."""
    con = outside_connection(settings.catalog_location, Path(settings.home) / "other-writer", read_only=False)
    con.execute(f"CREATE OR REPLACE {definition}")
    con.close()
    for query in ["select domain from report_citations", "select url_domain(url) from results", "select 1"]:
        with pytest.raises(NotReadOnly) as refused:
            analyst(settings, query)
        assert "the catalog's macro url_domain() is not searchlake's" in str(refused.value)


def test_a_refused_statement_is_one_error_line(cli, landed, error_lines_of):
    for statement in ["explain analyze copy (select 1) to 'x.csv'", "select * from read_csv('/etc/passwd')"]:
        done = cli.run("sql", statement)
        assert done.returncode == 2, statement
        assert done.stdout == ""
        assert len(error_lines_of(done.stderr)) == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "only reads" in done.stderr


# -- nothing behind the lake: its catalog server, credentials and the engine ----------

ENGINE_AND_EXTENSION_PROBES = [
    "select path from duckdb_databases()",
    "select reverse(path) from duckdb_databases()",
    "select value from duckdb_settings() where name = 'allowed_paths'",
    "select current_setting('allowed_paths')",
    "select current_setting('s3_secret_access_key')",
    "select * from duckdb_secrets()",
    "select * from which_secret('s3://lake/x', 's3')",
    "select getvariable('x')",
    "select * from duckdb_extensions()",
    "select * from pragma_database_list",
    "show databases",
    "select * from __ducklake_metadata_lake.main.ducklake_snapshot",
    "select * from lake.main.bundle_catalog",
    "select * from postgres_query('__ducklake_metadata_lake', 'select usename, passwd from pg_shadow')",
    "select * from postgres_query('__ducklake_metadata_lake', 'select pg_read_file(''/etc/passwd'')')",
    "select * from postgres_query('__ducklake_metadata_lake', 'select pg_terminate_backend(1)')",
    "call postgres_execute('__ducklake_metadata_lake', 'drop table ducklake_snapshot')",
    "select * from json_execute_serialized_sql(json_serialize_sql('select * from duckdb_settings()'))",
    "select * from query('select * from duckdb_settings()')",
    "select * from query_table('duckdb_settings')",
    "select pg_get_viewdef(1)",
    "with s as (select * from duckdb_settings()) select * from s",
    "select (select max(path) from duckdb_databases()) from consolidated",
    "select * from consolidated where url in (select path from duckdb_databases())",
]


@pytest.fixture
def catalog_with_password(tmp_path, postgres_catalog, monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_HOME", str(tmp_path / "home"))
    settings = Settings(catalog=postgres_catalog + " password=hunter2-catalog-secret")
    with open_catalog(settings, "test") as catalog:
        catalog.con.execute("select 1")
    return settings


@pytest.mark.parametrize("statement", ENGINE_AND_EXTENSION_PROBES)
def test_analysts_never_reach_what_is_behind_the_lake(catalog_with_password, statement):
    with pytest.raises(NotReadOnly) as refused:
        analyst(catalog_with_password, statement)
    assert "hunter2" not in str(refused.value)
    assert analyst(catalog_with_password, "select count(*) from consolidated").rows == [(0,)]


def test_no_query_opens_a_connection_to_a_port_of_its_choosing(catalog_with_password):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        for statement in [f"select * from postgres_scan('host=127.0.0.1 port={port} dbname=x', 'public', 't')",
                          f"select * from postgres_query('host=127.0.0.1 port={port}', 'select 1')",
                          f"select * from read_csv('http://127.0.0.1:{port}/x.csv')",
                          f"select * from 'http://127.0.0.1:{port}/x.parquet'"]:
            with pytest.raises(NotReadOnly):
                analyst(catalog_with_password, statement)
        with pytest.raises(socket.timeout):
            listener.accept()


def test_a_long_query_is_stopped_and_lets_the_catalog_go(landed, settings, cli, error_lines_of):
    with open_catalog(settings, "test-sql", read_only=True, confined=True) as catalog:
        with pytest.raises(QueryTimedOut):
            run_analyst_query(catalog, "select count(*) from range(1e14::bigint)", timeout=0.5)
    done = cli.run("sql", "select count(*) from range(1e14::bigint)", SEARCHLAKE_SQL_TIMEOUT="0.5")
    assert done.returncode == 2 and "longer than 0.5 s" in done.stderr
    assert len(error_lines_of(done.stderr)) == 1
    assert landed.consolidate() is not None  # the catalog is free again


def test_sql_output_shows_the_lakes_text_as_text(cli, lake, inbox, new_bundle, new_item):
    hostile = "[bold red]x[/] \x1b]0;pwned\x07\x1b[2J"
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/", title=hostile)])))
    lake.consolidate()
    done = cli.run("sql", "select title from consolidated")
    assert done.returncode == 0
    assert "[bold red]x[/]" in done.stdout  # markup is not interpreted
    assert "\x1b" not in done.stdout
