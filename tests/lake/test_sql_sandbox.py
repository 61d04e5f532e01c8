"""`searchlake sql` reads the lake's views and nothing else: no statement an
analyst types writes a file, reads a file outside the lake, or loads an
extension, however it is dressed up."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tasks.lake.catalog import open_catalog
from tasks.lake.query import NotReadOnly, run_analyst_query


@pytest.fixture
def landed(lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/"), new_item("https://b.example/")])))
    lake.consolidate()
    return lake


def analyst(settings, query: str):
    with open_catalog(settings, "test-sql", read_only=True, confined=True) as catalog:
        return run_analyst_query(catalog, query)


def snapshot(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and not p.name.endswith((".lock", ".holder"))}


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
    ]


def test_no_statement_writes_a_file_anywhere(landed, settings, tmp_path):
    home = Path(settings.home)
    inside_tables = home / "lake" / "tables" / "main" / "consolidated" / "written.parquet"
    targets = [tmp_path / "outside.csv", inside_tables, Path(settings.catalog_path),
               Path(str(settings.catalog_path) + ".wal")]
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
])
def test_files_outside_the_lake_cannot_be_read(landed, settings, tmp_path, statement):
    outside = tmp_path / "secret.parquet"
    landed.rows(f"copy (select 'secret' as s) to '{outside}'")
    with pytest.raises(NotReadOnly) as refused:
        analyst(settings, statement.format(outside=outside))
    assert "only reads" in str(refused.value)


@pytest.mark.parametrize("statement", [
    "install httpfs", "load fts", "force install json",
    "set enable_external_access = true", "set allowed_paths = ['/etc/passwd']",
    "pragma enable_profiling", "set autoload_known_extensions = true",
    "select 1; set variable results_files = ['/etc/passwd']",
    "call pragma_version()",
])
def test_extensions_and_settings_are_out_of_reach(landed, settings, statement):
    with pytest.raises(NotReadOnly):
        analyst(settings, statement)


def test_the_engine_itself_is_locked(landed, settings):
    found = dict(analyst(settings, "select name, value from duckdb_settings() where name in "
                                   "('enable_external_access', 'lock_configuration', "
                                   "'autoload_known_extensions', 'autoinstall_known_extensions')").rows)
    assert found == {"enable_external_access": "false", "lock_configuration": "true",
                     "autoload_known_extensions": "false", "autoinstall_known_extensions": "false"}


def test_analysts_can_read_an_earlier_snapshot(landed, settings, inbox, new_bundle, new_item):
    snapshot_before = analyst(settings, "select max(snapshot_id) from lake.snapshots()").rows[0][0]
    landed.ingest(inbox.write(new_bundle("q2", [new_item("https://c.example/")])))
    landed.consolidate()
    then = analyst(settings, f"select count(*) from consolidated AT (VERSION => {snapshot_before})")
    assert then.rows == [(2,)]
    assert analyst(settings, "select count(*) from consolidated").rows == [(3,)]


def test_queries_over_every_view_still_run(landed, settings):
    assert analyst(settings, "select count(*) from results").rows == [(2,)]
    assert analyst(settings, "with r as (select * from results) select count(*) from r "
                             "join consolidated using (source_id)").rows == [(2,)]
    for query in ["describe consolidated", "summarize results", "show tables", "from bundles",
                  "explain select * from consolidated", "explain analyze select count(*) from results",
                  "/* comment */ explain (analyze) select 1", "pragma version"]:
        assert analyst(settings, query).columns, query


def test_a_refused_statement_is_one_error_line(cli, landed, error_lines_of):
    for statement in ["explain analyze copy (select 1) to 'x.csv'", "select * from read_csv('/etc/passwd')"]:
        done = cli.run("sql", statement)
        assert done.returncode == 2, statement
        assert done.stdout == ""
        assert len(error_lines_of(done.stderr)) == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "only reads" in done.stderr
