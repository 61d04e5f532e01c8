"""The `searchlake` command line, run as a real process the way a user runs it."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from rich.cells import cell_len

from schemas.urls import location_of


def test_sql_runs_a_query(cli):
    done = cli.run("sql", "select 1 as one")
    assert done.returncode == 0, done.stderr
    assert "one" in done.stdout and "1" in done.stdout


def test_sql_as_csv_and_json(cli):
    query = "select 1 as n, 'a,b' as text union all select 2, 'c' order by n"
    as_csv = cli.run("sql", query, "--format", "csv")
    as_json = cli.run("sql", query, "--format", "json")
    assert as_csv.returncode == as_json.returncode == 0
    assert list(csv.reader(io.StringIO(as_csv.stdout))) == [["n", "text"], ["1", "a,b"], ["2", "c"]]
    assert json.loads(as_json.stdout) == [{"n": 1, "text": "a,b"}, {"n": 2, "text": "c"}]


def test_sql_sees_the_documented_views_on_a_fresh_lake(cli):
    views = ["bundles", "results", "consolidated", "search_read_cursor", "error_log", "quarantine"]
    query = " union all ".join(f"select '{v}' as view, count(*) as n from {v}" for v in views)
    done = cli.run("sql", query, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"view": v, "n": 0} for v in views]


def test_bad_sql_is_one_error_line(cli, error_lines_of):
    done = cli.run("sql", "selec 1 from nowhere")
    assert done.returncode != 0
    assert done.stdout == ""
    assert len(error_lines_of(done.stderr)) == 1 and done.stderr.count("\n") == 1
    assert "syntax error" in done.stderr


def test_analysts_sql_cannot_change_the_catalog(cli, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    for statement in ["drop table bundle_catalog", "delete from bundle_catalog",
                      "insert into read_cursor values ('t', null, null, 0, now(), 0, 0, false)",
                      "copy (select 1) to 'elsewhere.csv'", "select 1; drop view consolidated"]:
        done = cli.run("sql", statement)
        assert done.returncode != 0, statement
        assert done.stderr.startswith("error:") and "only reads" in done.stderr
    assert lake.count("bundles") == 1
    assert lake.count("search_read_cursor") == 0


def test_ingest_prints_one_line_per_refused_file_and_exits_non_zero(cli, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/")]))
    inbox.write_text("{ nope", "broken.json")
    inbox.write(new_bundle("q2", [new_item("https://a.example/", status="failed")]))
    inbox.write(new_bundle("q3", [new_item("https://b.example/")], task_id=None))

    done = cli.run("ingest", str(inbox.folder))

    assert done.returncode == 1
    assert "landed 1 bundles (1 items)" in done.stdout and "refused 3" in done.stdout
    refused = sorted(done.stderr.splitlines())
    assert len(refused) == 3 and all(line.startswith("refused ") for line in refused)
    assert any("broken.json: not_json" in line for line in refused)
    assert any("q2.json: invalid_value results[0].error_code:" in line for line in refused)
    assert any("q3.json: missing_task task_id:" in line for line in refused)


def test_ingest_with_task_id_then_consolidate_and_top(cli, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/", 0.3, title="Alpha page"),
                                  new_item("https://b.example/", 0.8, title="Beta page")], task_id=None))
    assert cli.run("ingest", "--task-id", "mytask", str(inbox.folder)).returncode == 0
    done = cli.run("consolidate", "--task-id", "mytask")
    assert done.returncode == 0, done.stderr
    assert "mytask: read 1 bundles (2 items), 2 new sources" in done.stdout

    top = cli.run("top", "--task-id", "mytask", "--limit", "1")
    assert top.returncode == 0
    assert "Beta page" in top.stdout and "Alpha page" not in top.stdout


def test_top_at_80_columns_tells_its_sources_apart(cli, inbox, new_bundle, new_item, tmp_path):
    """Files of one deep folder and pages of one site: the name of each
    file, the path of each page, not a shared prefix cut to "file:///tmp…"."""
    library = tmp_path / "a-library-folder-with-a-long-name" / "notes"
    library.mkdir(parents=True)
    folder = library.as_uri()
    inbox.write(new_bundle("q1", [new_item(f"{folder}/%E5%88%B9%E8%BD%A6%E7%89%87.md", 0.9, title="Brakes"),
                                  new_item(f"{folder}/chain-lube.md", 0.8, title="Chain"),
                                  new_item("https://www.example.org/guides/tyres", 0.7, title="Tyres")]))
    assert cli.run("ingest", str(inbox.folder), SEARCHLAKE_LIBRARY=str(library)).returncode == 0
    assert cli.run("consolidate", "--task-id", "t1").returncode == 0
    top = cli.run("top", "--task-id", "t1", COLUMNS="80")
    assert top.returncode == 0, top.stderr
    lines = top.stdout.splitlines()
    assert all(cell_len(line) <= 80 for line in lines)
    assert [next(line for line in lines if where in line) for where in
            ("刹车片.md", "chain-lube.md", "example.org/guides/tyres")]
    assert "file:///" not in top.stdout


def test_ingest_of_nothing_valid_exits_non_zero(cli, tmp_path):
    done = cli.run("ingest", str(tmp_path / "missing.json"))
    assert done.returncode == 1
    assert "not_found" in done.stderr


def test_a_bad_task_id_is_one_error_line(cli, error_lines_of, tmp_path):
    for args in (["consolidate", "--task-id", "../x"], ["top", "--task-id", "a/b"],
                 ["ingest", "--task-id", ".hidden", str(tmp_path)]):
        done = cli.run(*args)
        assert done.returncode == 2, args
        assert done.stderr.count("\n") == 1 and len(error_lines_of(done.stderr)) == 1, done.stderr
        assert "--task-id" in done.stderr


def test_consolidate_of_an_unknown_task_is_one_error_line(cli, lake, inbox, new_bundle, new_item):
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/")])))
    done = cli.run("consolidate", "--task-id", "nope")
    assert done.returncode == 2
    assert done.stderr == "error: no bundles have landed for task 'nope'\n"


def test_consolidate_without_a_task_says_how(cli):
    done = cli.run("consolidate")
    assert done.returncode == 2
    assert done.stderr.startswith("error: name a task with --task-id")


def test_consolidate_all_reads_every_task(cli, inbox, new_bundle, new_item):
    inbox.write(new_bundle("q1", [new_item("https://a.example/")], task_id="one"))
    inbox.write(new_bundle("q1", [new_item("https://a.example/")], task_id="two"), "two.json")
    cli.run("ingest", str(inbox.folder))
    done = cli.run("consolidate", "--all")
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["one: read 1 bundles (1 items), 1 new sources, 0 failed logged; 1 sources",
                                        "two: read 1 bundles (1 items), 1 new sources, 0 failed logged; 1 sources"]


def test_a_bad_setting_is_one_error_line(cli):
    done = cli.run("sql", "select 1", SEARCHLAKE_LOCK_TIMEOUT="soon")
    assert done.returncode == 2
    assert done.stderr.startswith("error: invalid setting lock_timeout") and done.stderr.count("\n") == 1


def test_demo_prints_the_top_sources(cli):
    demo = cli.run("demo")
    assert demo.returncode == 0, demo.stderr
    assert "landed 3 bundles" in demo.stdout
    top = json.loads(cli.run("sql", "select url, title from consolidated where task_id = 'sample' "
                                    "order by final_rank limit 3", "--format", "json").stdout)
    assert len(top) == 3
    for source in top:  # where each is: the page's host and path
        assert location_of(source["url"]) in demo.stdout and source["title"] in demo.stdout

    again = cli.run("demo")  # running it twice is harmless
    assert again.returncode == 0 and "unchanged 3" in again.stdout and "nothing new" in again.stdout


def test_an_earlier_catalog_is_mentioned_until_the_new_one_exists(cli):
    Path(cli.home).mkdir(parents=True, exist_ok=True)
    (Path(cli.home) / "catalog.duckdb").write_bytes(b"")
    first = cli.run("sql", "select count(*) from bundles", "--format", "csv")
    assert first.returncode == 0 and first.stdout.splitlines()[-1] == "0"
    assert first.stderr.startswith(f"note: {Path(cli.home) / 'catalog.duckdb'} is the catalog of an earlier searchlake")
    again = cli.run("sql", "select 1", "--format", "csv")
    assert again.returncode == 0 and again.stderr == ""
