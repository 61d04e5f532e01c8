"""A task's charts as plain numbers and bar geometry; the template draws them
as inline SVG (no script, nothing loaded from elsewhere)."""

from __future__ import annotations

from dataclasses import dataclass

BAR_AREA = 240  # px of the longest bar


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str
    length: float  # px, proportional to value


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    empty: str = "nothing recorded"

    @property
    def height(self) -> int:
        return 22 * max(1, len(self.bars)) + 4


def bar_chart(title: str, rows: list[tuple[str, float, str]], empty: str = "nothing recorded") -> Chart:
    top = max((value for _, value, _ in rows), default=0) or 1
    return Chart(title, [Bar(label, value, text, BAR_AREA * value / top) for label, value, text in rows], empty)


def task_charts(per_provider: list[tuple], calls: list[dict], bins: dict[int, int]) -> list[Chart]:
    """Sources per provider, failed calls and latency per provider, score distribution."""
    timed = [c for c in calls if c["median_ms"] is not None]
    return [
        bar_chart("Sources per provider", [(p, n, str(n)) for p, n in per_provider]),
        bar_chart("Failed calls per provider",
                  [(c["provider"], c["failed"], f"{c['failed']} of {c['calls']}") for c in calls]),
        bar_chart("Search latency per provider (median)",
                  [(c["provider"], c["median_ms"], f"{c['median_ms']:.0f} ms (max {c['max_ms']} ms)") for c in timed],
                  empty="no call durations recorded"),
        bar_chart("Sources by score_final",
                  [(f"{b / 10:.1f}–{(b + 1) / 10:.1f}", bins.get(b, 0), str(bins.get(b, 0))) for b in range(10)]
                  if bins else []),
    ]
