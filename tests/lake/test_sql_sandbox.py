"""`searchlake sql` reads the lake's views and nothing else: no statement an
analyst types writes a file, reads a file outside the lake, or loads an
extension, however it is dressed up."""

from __future__ import annotations

import hashlib
import signal
import socket
from pathlib import Path

import pytest

from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.lake.definitions import ForeignDefinition
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


def test_show_tables_lists_exactly_what_sql_lets_you_read(landed, settings):
    """Every name SHOW TABLES gives answers a query, the documented tables
    (batch_questions, watch_round_sources) among them; searchlake's internal
    tables, which a query is refused, are not listed."""
    listed = {row[0] for row in analyst(settings, "show tables").rows}
    assert {"bundles", "consolidated", "batch_questions", "watch_round_sources", "watch_round_answers"} <= listed
    for name in sorted(listed):
        assert analyst(settings, f"select count(*) from {name}").rows, name
    with open_catalog(settings, "test-sql", read_only=True) as catalog:  # the catalog holds more
        internal = {row[0] for row in catalog.con.execute("show tables").fetchall()} - listed
    assert internal
    with pytest.raises(NotReadOnly):
        analyst(settings, f"select count(*) from {sorted(internal)[0]}")


def test_no_column_an_analyst_reads_needs_quoting(landed, settings):
    """A column named like a keyword ("at") is a parser error unless quoted."""
    for name in sorted(row[0] for row in analyst(settings, "show tables").rows):
        columns = [row[0] for row in analyst(settings, f"describe {name}").rows]
        assert analyst(settings, f"select {', '.join(columns)} from {name} limit 0").columns == columns, name


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
        with pytest.raises(ForeignDefinition) as refused:
            analyst(settings, query)
        assert "a view bundles" in str(refused.value) and "did not write" in str(refused.value)


@pytest.mark.parametrize("definition", [
    "SELECT name AS query_id, value AS provider FROM duckdb_settings()",
    "SELECT content AS query_id FROM read_text('/etc/hostname')",
])
def test_an_earlier_view_time_travel_reads_is_checked_too(landed, settings, definition):
    """A view replaced and put back: the snapshots in between still hold
    the other definition, which `AT (VERSION => n)` would read."""
    con = outside_connection(settings.catalog_location, Path(settings.home) / "other-writer", read_only=False)
    own = con.execute("select sql from duckdb_views() where view_name = 'bundles'").fetchone()[0]
    con.execute(f"CREATE OR REPLACE VIEW lake.main.bundles AS {definition}")
    con.execute(own.replace("CREATE VIEW bundles", "CREATE OR REPLACE VIEW lake.main.bundles"))
    con.close()
    with pytest.raises(NotReadOnly) as refused:
        analyst(settings, "select 1")
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
        with pytest.raises(ForeignDefinition) as refused:
            analyst(settings, query)
        assert "a macro url_domain() that searchlake did not write" in str(refused.value)


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
    # a CTE's name covers its own query only, not the query around it
    "select database_name, path from (with duckdb_databases as (select 1) select 1) x, duckdb_databases",
    "select name, setting from (with pg_settings as (select 1) select 1) x, pg_settings",
    "with a as (select 1) select * from (with duckdb_settings as (select 1) select * from a) y, duckdb_settings",
    "select * from consolidated where url in (with duckdb_databases as (select 1) select 1) "
    "or url in (select path from duckdb_databases)",
]


PASSWORD = "hunter2-catalog-secret"


@pytest.fixture
def catalog_with_password(tmp_path, postgres_server, postgres_catalog, monkeypatch):
    """A PostgreSQL catalog whose role must give its password."""
    monkeypatch.setenv("SEARCHLAKE_HOME", str(tmp_path / "home"))
    dbname = postgres_catalog.split("dbname=")[1].split()[0]
    settings = Settings(catalog=postgres_server.create_login(f"{dbname}_owner", PASSWORD, dbname))
    with open_catalog(settings, "test") as catalog:
        catalog.con.execute("select 1")
    return settings


def test_the_catalogs_password_is_nowhere_in_the_engines_metadata(catalog_with_password):
    """The password reaches PostgreSQL as the engine's secret: no metadata
    view or function of the engine holds it, in any session of searchlake."""
    with open_catalog(catalog_with_password, "test") as catalog:
        shown = catalog.con.execute(
            "select (select string_agg(coalesce(path, ''), ' ') from duckdb_databases()), "
            "(select string_agg(value, ' ') from duckdb_settings()), "
            "(select string_agg(secret_string, ' ') from duckdb_secrets())").fetchone()
    assert all(PASSWORD not in (text or "") for text in shown), shown
    assert analyst(catalog_with_password, "select count(*) from consolidated").rows == [(0,)]


@pytest.mark.parametrize("statement", ENGINE_AND_EXTENSION_PROBES)
def test_analysts_never_reach_what_is_behind_the_lake(catalog_with_password, statement):
    with pytest.raises(NotReadOnly) as refused:
        analyst(catalog_with_password, statement)
    assert PASSWORD not in str(refused.value)
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


# -- bounded: rows, size, memory and time of the whole command ------------------

def test_a_result_past_the_row_cap_is_one_error_line(landed, cli, error_lines_of):
    done = cli.run("sql", "select * from range(10)", SEARCHLAKE_SQL_MAX_ROWS="5")
    assert done.returncode == 2 and done.stdout == ""
    assert error_lines_of(done.stderr) == [done.stderr.strip()] and "more than 5 rows" in done.stderr
    assert cli.run("sql", "select * from range(5)", SEARCHLAKE_SQL_MAX_ROWS="5").returncode == 0


def test_a_result_past_the_size_cap_is_one_error_line(landed, cli, error_lines_of):
    done = cli.run("sql", "select repeat('x', 600000) from range(2)", "--format", "csv", SEARCHLAKE_SQL_MAX_MB="1")
    assert done.returncode == 2 and done.stdout == ""
    assert error_lines_of(done.stderr) == [done.stderr.strip()] and "more than 1 MB" in done.stderr


def test_a_query_past_the_memory_limit_is_stopped_in_one_line(landed, cli, error_lines_of):
    """Eight values of 100 MB each: the command stops at its memory limit
    rather than holding gigabytes."""
    done = cli.run("sql", "select repeat('x', 100000000) from range(8)", SEARCHLAKE_SQL_MEMORY_MB="768",
                   timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert error_lines_of(done.stderr) == [done.stderr.strip()] and "more memory than 768 MB" in done.stderr


@pytest.mark.parametrize("handler", [signal.default_int_handler, signal.SIG_IGN])
def test_the_time_limit_covers_the_whole_command(handler):
    """Whatever the command is doing when its time is up (here: Python
    formatting rows, where no engine interrupt reaches), it stops — even
    where a library set Ctrl-C aside before — and Ctrl-C is as it was."""
    import time
    from flows.cli.limits import within
    stopped = QueryTimedOut("stopped")
    before = signal.signal(signal.SIGINT, handler)
    try:
        started = time.monotonic()
        with pytest.raises(QueryTimedOut):
            with within(0.3, stopped):
                while time.monotonic() - started < 30:
                    sum(range(1000))
        assert time.monotonic() - started < 10
        assert signal.getsignal(signal.SIGINT) == handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_during_a_query_is_an_interruption_not_an_engine_error():
    """Ctrl-C while the engine runs: the command says "interrupted" (a
    KeyboardInterrupt), not the engine's "Query interrupted" traceback."""
    import os
    import threading

    import duckdb
    from flows.cli.limits import within
    con = duckdb.connect()
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        with within(60, QueryTimedOut("stopped")):
            con.execute("select count(*) from range(100000000000) a").fetchall()


def test_a_configured_secret_in_the_lakes_rows_is_masked(cli, lake, inbox, new_bundle, new_item):
    key = "tvly-0123456789abcdef-secret"
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/", title=f"leaked {key} here")])))
    done = cli.run("sql", "select title, [title] as titles from results", "--format", "json", TAVILY_API_KEY=key)
    assert done.returncode == 0 and key not in done.stdout
    assert "leaked *** here" in done.stdout
