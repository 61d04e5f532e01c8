"""The catalog is input: a view or macro another writer defines in it never
runs inside searchlake, whether an analyst's query, ingest or consolidation
would have reached it; `searchlake doctor` shows it and removes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.lake.catalog import open_catalog
from tasks.lake.definitions import ForeignDefinition, foreign_definitions
from tasks.lake.query import run_analyst_query
from tests.outside_reader import outside_connection

HOSTNAME_READER = "(SELECT max(content) FROM read_text('/etc/hostname'))"

PLANTED = {
    "upper": "CREATE MACRO lake.main.upper(x) AS current_setting('allowed_paths')",
    "lower": f"CREATE MACRO lake.main.lower(x) AS {HOSTNAME_READER}",
    "range": "CREATE MACRO lake.main.range(n) AS TABLE SELECT path AS range FROM duckdb_databases()",
    "generate_series": "CREATE MACRO lake.main.generate_series(n) AS TABLE SELECT 42 AS generate_series",
    "Bundles": 'DROP VIEW lake.main.bundles; CREATE VIEW lake.main."Bundles" AS SELECT * FROM duckdb_settings()',
    "url_domain": f"CREATE OR REPLACE MACRO lake.main.url_domain(url) AS {HOSTNAME_READER}",
}


def plant(settings, statement: str) -> None:
    """Another writer of the catalog defines something in it."""
    con = outside_connection(settings.catalog_location, Path(settings.home) / "other-writer", read_only=False)
    try:
        con.execute(statement)
    finally:
        con.close()


@pytest.fixture
def landed(lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/"), new_item("https://b.example/")])))
    lake.consolidate()
    return lake


def analyst(settings, query: str):
    with open_catalog(settings, "test-sql", read_only=True, confined=True) as catalog:
        return run_analyst_query(catalog, query)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_definition_is_refused_by_name_before_anything_runs(landed, settings, cli, name,
                                                                        error_lines_of):
    plant(settings, PLANTED[name])
    for query in ["select upper('x')", "select * from range(2)", "select * from generate_series(2)",
                  "select count(*) from bundles", "select url_domain(url) from results"]:
        done = cli.run("sql", query)
        assert done.returncode == 2 and done.stdout == ""
        assert error_lines_of(done.stderr) == [done.stderr.strip()]
        assert f" {name}" in done.stderr and "did not write" in done.stderr
    with pytest.raises(ForeignDefinition):
        analyst(settings, "select 1")


def test_a_planted_function_never_runs_in_ingest_or_consolidation(settings, cli, inbox, new_bundle, new_item):
    """The attack that worked: `lower` redefined to read a file of the host,
    then an ingest and a consolidation stored its content as a domain."""
    host = Path("/etc/hostname").read_text().strip()
    cli.run("ingest", inbox.write(new_bundle("q0", [new_item("https://first.example/")])))
    plant(settings, PLANTED["lower"])
    bundle = inbox.write(new_bundle("q1", [new_item("https://WWW.Example.ORG/page")]))
    for step in [("ingest", bundle), ("consolidate", "--task-id", "t1")]:
        done = cli.run(*step)
        assert done.returncode == 2 and "a macro lower()" in done.stderr, done.stderr
    assert cli.run("doctor").returncode == 1
    repaired = cli.run("doctor", "--repair")
    assert repaired.returncode == 0 and "removed: a macro lower()" in repaired.stdout
    assert cli.run("ingest", bundle).returncode == 0
    assert cli.run("consolidate", "--task-id", "t1").returncode == 0
    domains = cli.run("sql", "select list(domain order by domain) from consolidated", "--format", "csv").stdout
    assert "example.org" in domains and (not host or host not in domains)


def test_a_definition_planted_while_a_session_is_open_is_never_resolved(landed, settings):
    """Between a session's check and its statements: names resolve in the
    built-ins first, and each transaction checks the catalog again."""
    with open_catalog(settings, "test") as catalog:
        plant(settings, PLANTED["upper"])
        plant(settings, PLANTED["lower"])
        assert catalog.con.execute("select upper('a'), lower('B')").fetchall() == [("A", "b")]
        with pytest.raises(ForeignDefinition):
            catalog.transaction(lambda cat: cat.con.execute("select 1"), action="test")


def test_views_and_macros_of_a_schema_of_the_analysts_own_are_left_alone(landed, settings):
    plant(settings, "CREATE SCHEMA lake.mine; CREATE MACRO lake.mine.upper(x) AS 'mine'; "
                    "CREATE VIEW lake.mine.v AS SELECT 1 AS one")
    assert analyst(settings, "select upper('x')").rows == [("X",)]
    with open_catalog(settings, "test") as catalog:
        assert foreign_definitions(catalog.con) == []


def test_doctor_on_a_clean_catalog_says_so(landed, cli):
    done = cli.run("doctor")
    assert done.returncode == 0 and "only searchlake's own" in done.stdout


def test_a_fresh_lake_holds_exactly_searchlakes_definitions(settings):
    """What the catalog stores of searchlake's own views and macro is what
    the check expects (else every command would refuse its own lake)."""
    with open_catalog(settings, "test") as catalog:
        assert foreign_definitions(catalog.con) == []
        views = catalog.con.execute("select count(*) from duckdb_views() where database_name = 'lake'").fetchone()
    assert views[0] >= 20
