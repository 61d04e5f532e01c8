"""The search progress bars `searchlake research` draws in the terminal."""

from __future__ import annotations

import io

from rich.console import Console

from flows.cli.console import TerminalObserver


def test_a_second_round_of_searches_is_a_bar_of_its_own_named_so_and_never_past_its_total():
    out = io.StringIO()
    with TerminalObserver(Console(file=out, width=80, force_terminal=False)) as watch:
        watch.searches_planned(3)
        for n in range(4):  # one report more than planned: a late retry's
            watch.search_done("library", f"q{n}", 10, failed=False)
        watch.searches_planned(2)
        for n in range(2):
            watch.search_done("library", f"d{n}", 10, failed=False)
    lines = [line for line in out.getvalue().splitlines() if "searches" in line]
    assert any(line.lstrip().startswith("searches ") and "3/3" in line for line in lines)
    assert any("searches, round 2" in line and "2/2" in line for line in lines)
    assert not any("4/3" in line for line in lines)


def test_the_run_plan_shows_its_policy_and_stages_only_with_details():
    plan = ["trace id: t", "task id:  x", "stages:   plan → search", "providers: library; target 3 sources",
            "policy:   default — max_keywords=6"]
    shown = {}
    for details in (False, True):
        out = io.StringIO()
        with TerminalObserver(Console(file=out, width=80, force_terminal=False), details) as watch:
            watch.plan(plan)
        shown[details] = [line for line in out.getvalue().splitlines() if line.strip()]
    assert shown[False] == ["trace id: t", "task id:  x", "providers: library; target 3 sources"]
    assert shown[True] == plan
