"""What `searchlake sql` prints: readable at 80 columns however wide the rows
(a table when the columns fit, else one block per row), and CSV and JSON
that hold lists, structs, maps and JSON values as JSON."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rich.cells import cell_len

NARROW = {"COLUMNS": "80"}
LONG = ["a", "b", "c", "f", "g", "h"]
# Six long columns and three short ones: at 80 columns a table would give each long one 7 characters.
WIDE_ROW = ("select 'r' || i as id, " + ", ".join(f"repeat('long {name} ', 30) as {name}" for name in LONG)
            + ", i * 2 as d, 'end' as e from range(3) t(i)")


def widest_line(text: str) -> int:
    return max(cell_len(line) for line in text.splitlines())


def test_wide_rows_become_blocks_that_fit_80_columns(cli):
    done = cli.run("sql", WIDE_ROW, **NARROW)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert widest_line(done.stdout) <= 80
    assert [line for line in lines if line.startswith("─[ row ")] == [
        f"─[ row {n} ]" + "─" * (80 - len(f"─[ row {n} ]")) for n in (1, 2, 3)]
    assert sum(line.startswith("c ") for line in lines) == 3  # one line per column and row
    assert len(lines) == 3 * (1 + 9) + 1 and lines[-1] == "(3 rows)"
    assert "d  │ 4" in lines and any(line.startswith("a  │ long a long a") and line.endswith("…") for line in lines)


def test_rows_that_fit_stay_a_table_with_long_cells_cut(cli):
    done = cli.run("sql", "select i, repeat('word ', 100) as words from range(2) t(i)", **NARROW)
    assert done.returncode == 0, done.stderr
    assert widest_line(done.stdout) == 80
    body = [line for line in done.stdout.splitlines() if line.startswith("│")]
    assert len(body) == 2 and all(line.endswith("… │") for line in body)
    assert done.stdout.splitlines()[-1] == "(2 rows)"


def test_a_wide_terminal_shows_more_of_each_cell(cli):
    done = cli.run("sql", "select repeat('word ', 100) as words", COLUMNS="200")
    assert widest_line(done.stdout) == 200 and "─[ row" not in done.stdout


def test_the_layout_can_be_chosen(cli):
    as_table = cli.run("sql", WIDE_ROW, "--layout", "table", **NARROW)
    assert as_table.returncode == 0 and "─[ row" not in as_table.stdout and "┃ id" in as_table.stdout
    assert widest_line(as_table.stdout) <= 80
    as_blocks = cli.run("sql", "select 1 as one", "--layout", "vertical", **NARROW)
    assert as_blocks.stdout.splitlines()[1:] == ["one │ 1", "(1 row)"]


def test_wrap_shows_whole_cells(cli):
    done = cli.run("sql", "select repeat('abcdefghij', 100) as letters", "--wrap", **NARROW)
    assert done.returncode == 0 and widest_line(done.stdout) <= 80
    assert "".join(line.strip("│ ").replace("letters", "") for line in done.stdout.splitlines()[3:-2]) \
        .startswith("abcdefghij" * 100)
    assert "…" not in done.stdout


def test_a_huge_cell_costs_one_line(cli, lake, inbox, new_bundle, new_item):
    page = "lorem ipsum\n" * 80_000  # about a megabyte of page text
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/", content_text=page)])))
    lake.consolidate()
    done = cli.run("sql", "select url, content_text from consolidated", **NARROW)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 6 and widest_line(done.stdout) <= 80


def test_cells_and_column_names_are_shown_as_text(cli, lake, inbox, new_bundle, new_item):
    hostile = "[bold red]x[/] \x1b]0;pwned\x07\x1b[2J\u202eevil"
    lake.ingest(inbox.write(new_bundle("q1", [new_item("https://a.example/", title=hostile)])))
    lake.consolidate()
    for layout in ("table", "vertical"):
        done = cli.run("sql", 'select title as "[red]t\x1b[1m" from consolidated', "--layout", layout, **NARROW)
        assert done.returncode == 0, done.stderr
        assert "[bold red]x[/]" in done.stdout and "[red]t" in done.stdout  # markup is not interpreted
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout


def test_a_bad_layout_is_one_error_line(cli, error_lines_of):
    done = cli.run("sql", "select 1", "--layout", "sideways")
    assert done.returncode == 2 and done.stdout == ""
    assert error_lines_of(done.stderr) == done.stderr.splitlines()
    assert "'sideways' is not one of 'table', 'vertical', 'auto'" in done.stderr


# -- CSV and JSON ------------------------------------------------------------------

TYPED = ("select ['q3.searxng', 'q1'] as ids, {'a': 1, 'b': [true, null]} as s, map {'k': [1, 2]} as m, "
         "'{\"x\": [1, {\"y\": null}]}'::JSON as j, [{'inner': '[1]'::JSON}] as nested, "
         "TIMESTAMPTZ '2026-03-01 12:00:00.5+00' as at, 'nan'::double as nan, 2.50::decimal(5, 2) as price, "
         "true as yes, null as nothing")


def test_csv_writes_lists_structs_maps_and_json_as_json(cli):
    done = cli.run("sql", TYPED, "--format", "csv")
    assert done.returncode == 0, done.stderr
    header, row = list(csv.reader(io.StringIO(done.stdout)))
    cell = dict(zip(header, row))
    assert json.loads(cell["ids"]) == ["q3.searxng", "q1"]
    assert json.loads(cell["s"]) == {"a": 1, "b": [True, None]}
    assert json.loads(cell["m"]) == {"k": [1, 2]}
    assert json.loads(cell["j"]) == {"x": [1, {"y": None}]}
    assert json.loads(cell["nested"]) == [{"inner": [1]}]
    assert cell["at"] == "2026-03-01T12:00:00.500000+00:00"
    assert (cell["nan"], cell["price"], cell["yes"], cell["nothing"]) == ("nan", "2.50", "true", "")


def test_json_embeds_json_values_as_json(cli):
    done = cli.run("sql", TYPED, "--format", "json")
    assert done.returncode == 0, done.stderr
    [record] = json.loads(done.stdout)
    assert record == {"ids": ["q3.searxng", "q1"], "s": {"a": 1, "b": [True, None]}, "m": {"k": [1, 2]},
                      "j": {"x": [1, {"y": None}]}, "nested": [{"inner": [1]}],
                      "at": "2026-03-01T12:00:00.500000+00:00", "nan": None, "price": 2.5, "yes": True,
                      "nothing": None}


def test_json_columns_of_the_lake_are_not_double_encoded(cli):
    done = cli.run("sql", "select config from search_policy where demand_id = 'default'", "--format", "json")
    assert done.returncode == 0, done.stderr
    [record] = json.loads(done.stdout)
    assert isinstance(record["config"], dict) and record["config"]["max_keywords"] == 6


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_a_value_nested_too_deeply_is_one_error_line_or_shown_cut(cli, error_lines_of, fmt):
    deep = "select (repeat('[', 5000) || repeat(']', 5000))::JSON as deep"
    done = cli.run("sql", deep, "--format", fmt, **NARROW)
    if fmt == "json":
        assert done.returncode == 2 and done.stdout == ""
        assert error_lines_of(done.stderr) == done.stderr.splitlines() and "nests too deeply" in done.stderr
    else:  # CSV and the terminal show a JSON column's text as it is
        assert done.returncode == 0 and "[[[[" in done.stdout


def test_invalid_json_never_becomes_a_json_value(cli, error_lines_of):
    # DuckDB checks JSON wherever it enters (a cast, an insert, a table file read):
    # the analyst hears why, in one line.
    done = cli.run("sql", "select '{bad'::JSON as j", "--format", "json")
    assert done.returncode == 2 and done.stdout == ""
    assert error_lines_of(done.stderr) == done.stderr.splitlines() and "Malformed JSON" in done.stderr


def test_a_json_column_whose_text_does_not_parse_is_written_as_that_text():
    import duckdb

    from tasks.lake.result_text import QueryResult, to_csv, to_json
    cursor = duckdb.connect().execute("select '[1]'::JSON as j")
    json_type = cursor.description[0][1]
    result = QueryResult(["j"], [("{bad",), ("[1]",)], [json_type])
    assert json.loads(to_json(result)) == [{"j": "{bad"}, {"j": [1]}]
    assert to_csv(result) == "j\n{bad\n[1]\n"


def test_wrap_keeps_line_breaks_so_a_plan_reads_as_drawn(cli):
    query = "explain select i from range(3) t(i) where i > 1"
    cut = cli.run("sql", query, **NARROW)
    assert cut.returncode == 0 and len([line for line in cut.stdout.splitlines() if "┌" in line]) == 1
    drawn = cli.run("sql", query, "--wrap", **NARROW)
    assert drawn.returncode == 0 and widest_line(drawn.stdout) <= 80
    assert len([line for line in drawn.stdout.splitlines() if "FILTER" in line or "RANGE" in line]) >= 2


def test_json_keeps_every_column_of_a_repeated_name(cli):
    done = cli.run("sql", "select 1 as a, 2 as a", "--format", "json")
    assert json.loads(done.stdout) == [{"a": 1, "a_1": 2}]


FORMULAS = ("select '=HYPERLINK(\"http://evil.example\",\"x\")' as f, '+cmd|'' /C calc''!A0' as p, "
            "'-2+3' as m, '@SUM(A1)' as a, chr(9) || '=1' as t, "
            "-5 as n, -2.5::double as d, -1.25::decimal(5, 2) as dec, '-7' as text_number, "
            "'plain' as ok, 'a=b' as inside, 1 as \"=col\"")


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_quoted_but_numbers_stay_numbers(cli):
    done = cli.run("sql", FORMULAS, "--format", "csv")
    assert done.returncode == 0, done.stderr
    header, row = list(csv.reader(io.StringIO(done.stdout, newline="")))
    assert header[-1] == "'=col"
    cell = dict(zip(header, row))
    assert (cell["f"], cell["p"], cell["m"], cell["a"]) == (
        "'=HYPERLINK(\"http://evil.example\",\"x\")", "'+cmd|' /C calc'!A0", "'-2+3", "'@SUM(A1)")
    assert cell["t"] == "'\t=1"
    # numbers, negative ones included, stay numbers; so does text that is only a number
    assert (cell["n"], cell["d"], cell["dec"], cell["text_number"]) == ("-5", "-2.5", "-1.25", "-7")
    assert (cell["ok"], cell["inside"]) == ("plain", "a=b")


def test_a_csv_cell_starting_with_a_carriage_return_is_quoted_and_stays_one_cell():
    import duckdb

    from tasks.lake.result_text import QueryResult, to_csv
    cursor = duckdb.connect().execute("select chr(13) || '=1+1' as r, 'x' || chr(13) || 'y' as inside")
    result = QueryResult([d[0] for d in cursor.description], cursor.fetchall(), [d[1] for d in cursor.description])
    written = to_csv(result)
    assert list(csv.reader(io.StringIO(written, newline=""))) == [["r", "inside"], ["'\r=1+1", "x\ry"]]
    assert written.endswith('"\n') and "\r\n" not in written  # lines end in a line feed, as before
